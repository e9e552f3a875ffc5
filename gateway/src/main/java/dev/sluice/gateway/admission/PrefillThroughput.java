package dev.sluice.gateway.admission;

/**
 * The measured rate at which the prefill workers chew through prompt tokens, the denominator of
 * every wait prediction and Retry-After. Only busy time counts (time with prefill work in
 * flight), so an idle minute does not make the cluster look slow. Exponentially weighted over
 * about {@code horizonSeconds} of busy time; before the first measurement, the configured guess.
 * Guarded by the controller's lock.
 */
final class PrefillThroughput {
    private final double horizonSeconds;
    private double tokensPerSecond;
    private boolean measured;
    private long busySinceNanos = -1;
    private long sampleTokens;
    private long sampleStartNanos;

    PrefillThroughput(double initialTokensPerSecond, double horizonSeconds) {
        this.tokensPerSecond = initialTokensPerSecond;
        this.horizonSeconds = horizonSeconds;
    }

    double tokensPerSecond() {
        return tokensPerSecond;
    }

    boolean measured() {
        return measured;
    }

    /** Call whenever in-flight prefill work goes from none to some, or from some to none. */
    void busy(boolean busy, long now) {
        if (busy && busySinceNanos < 0) {
            busySinceNanos = now;
            sampleStartNanos = now;
            sampleTokens = 0;
        } else if (!busy && busySinceNanos >= 0) {
            fold(now);
            busySinceNanos = -1;
        }
    }

    /** A prefill finished {@code tokens} prompt tokens. */
    void completed(long tokens, long now) {
        sampleTokens += tokens;
        // fold at least every 100 ms of busy time so the estimate follows load changes
        if (now - sampleStartNanos >= 100_000_000L) {
            fold(now);
        }
    }

    private void fold(long now) {
        double seconds = (now - sampleStartNanos) / 1e9;
        if (seconds <= 0 || sampleTokens == 0) {
            return;
        }
        double rate = sampleTokens / seconds;
        if (!measured) {
            tokensPerSecond = rate;
            measured = true;
        } else {
            double alpha = Math.min(1.0, seconds / horizonSeconds);
            tokensPerSecond += alpha * (rate - tokensPerSecond);
        }
        sampleTokens = 0;
        sampleStartNanos = now;
    }
}
