package dev.sluice.gateway.routing;

/**
 * The data-parallel ranks admission chose for one dispatch: the prefill's rank among its
 * {@code prefillRanks} and the decode's among its {@code decodeRanks} (a unified worker: the same
 * rank twice). A rank of -1: that worker is routed as a whole.
 */
public record RankChoice(int prefillRank, int prefillRanks, int decodeRank, int decodeRanks) {
    public static final RankChoice NONE = new RankChoice(-1, 1, -1, 1);

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
