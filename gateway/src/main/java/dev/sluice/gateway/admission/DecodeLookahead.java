package dev.sluice.gateway.admission;

import java.util.Optional;

/**
 * Whether a decode routed per data-parallel rank can be kept full at saturation. The gateway counts a
 * stream on its rank from dispatch to its end ({@link RankWindows}), so with each rank's share of
 * {@code admission.decode.max_inflight_streams} at or below the rank's own running cap, a stream that ends
 * leaves its rank one short until the replacement's prefill and KV transfer are done. With a share above
 * the cap, the extra streams (the lookahead) are prefilled and transferred while the rank is busy and wait
 * inside the decode, KV ready, to start the moment a slot frees: SGLang's PD decode keeps requests beyond its
 * running cap in its own prealloc, transfer and waiting queues ({@code process_decode_queue},
 * {@code get_new_prebuilt_batch}: sgl-project/sglang@278e503a5e16252fb4ff513018b6a73e30976f63
 * python/sglang/srt/disaggregation/decode.py). Pure.
 */
public final class DecodeLookahead {
    /** Streams a rank should hold beyond its running cap: two covered every end in the saturated benchmark. */
    public static final int SUGGESTED = 2;

    private DecodeLookahead() {
    }

    /**
     * The warning for a decode of {@code ranks} ranks, each running at most {@code runningPerRank}, behind a
     * window of {@code windowStreams} (each rank its share, rounded up, as {@link RankWindows} divides it);
     * empty when it is routed as a whole, its cap is unknown (0), or the share is above the cap.
     */
    public static Optional<String> bubble(int windowStreams, int ranks, int runningPerRank) {
        if (ranks <= 1 || runningPerRank <= 0 || windowStreams <= 0) {
            return Optional.empty();
        }
        int share = windowStreams / ranks + (windowStreams % ranks == 0 ? 0 : 1);
        if (share > runningPerRank) {
            return Optional.empty();
        }
        return Optional.of("admission.decode.max_inflight_streams: " + windowStreams + " (" + share + " a rank over "
                + ranks + " ranks) is at or below the worker's own running cap of " + runningPerRank + " a rank: when "
                + "requests wait in the gateway, each stream that ends leaves its rank short until the replacement's "
                + "prefill and KV transfer are done. To keep the ranks full, set it to ranks x (cap + "
                + SUGGESTED + "), here " + ranks * (runningPerRank + SUGGESTED) + ", so that replacements wait inside "
                + "the decode with their KV ready (docs/admission.md, \"Decode lookahead\")");
    }
}
