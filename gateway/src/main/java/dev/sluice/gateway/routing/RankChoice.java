package dev.sluice.gateway.routing;

/**
 * The data-parallel ranks admission chose for one dispatch: the prefill's rank among its
 * {@code prefillRanks} and the decode's among its {@code decodeRanks} (a unified worker: the same
 * rank twice). A rank of -1: that worker is routed as a whole. {@code decodeQueued}: the gateway
 * already holds the decode rank's (or whole worker's) own running cap of streams, so this one is the
 * decode lookahead and waits in the decode, its KV in, for a slot to free (docs/admission.md).
 */
public record RankChoice(int prefillRank, int prefillRanks, int decodeRank, int decodeRanks, boolean decodeQueued) {
    public static final RankChoice NONE = new RankChoice(-1, 1, -1, 1);

    public RankChoice(int prefillRank, int prefillRanks, int decodeRank, int decodeRanks) {
        this(prefillRank, prefillRanks, decodeRank, decodeRanks, false);
    }

    /** This choice, its decode stream known to wait in the decode (or not). */
    public RankChoice withDecodeQueued(boolean queued) {
        return queued == decodeQueued ? this : new RankChoice(prefillRank, prefillRanks, decodeRank, decodeRanks, queued);
    }

    public RankChoice {
        if (prefillRank >= prefillRanks || decodeRank >= decodeRanks) {
            throw new IllegalArgumentException("rank past the worker's ranks: prefill " + prefillRank + "/" + prefillRanks
                    + ", decode " + decodeRank + "/" + decodeRanks);
        }
    }

    public boolean prefillRanked() {
        return prefillRank >= 0;
    }

    public boolean decodeRanked() {
        return decodeRank >= 0;
    }
}
