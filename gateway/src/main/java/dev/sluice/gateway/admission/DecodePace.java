package dev.sluice.gateway.admission;

/**
 * Seconds per generated token once a request's prefill is done (its KV handed over, then every
 * decode step), exponentially weighted over recent requests. A non-streamed client sees nothing
 * until its whole answer is written, so its wait for a first byte is its first token plus this
 * times the tokens it asked for: what the deadline checks add for it. Unknown (0) until a request
 * of at least {@link #MIN_TOKENS} tokens has ended. Guarded by the admission lock.
 */
final class DecodePace {
    static final long MIN_TOKENS = 8;
    private static final double WEIGHT = 0.2;
    private double secondsPerToken;

    /** A request generated {@code tokens} tokens in {@code seconds} after its prefill was done. */
    void observed(double seconds, long tokens) {
        if (tokens < MIN_TOKENS || !(seconds > 0)) {
            return;
        }
        double sample = seconds / tokens;
        secondsPerToken = secondsPerToken == 0 ? sample : secondsPerToken + WEIGHT * (sample - secondsPerToken);
    }

    /** Seconds for {@code tokens} tokens after the first (0 while unknown). */
    double seconds(long tokens) {
        return secondsPerToken * tokens;
    }

    double secondsPerToken() {
        return secondsPerToken;
    }
}
