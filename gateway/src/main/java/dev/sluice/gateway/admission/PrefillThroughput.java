package dev.sluice.gateway.admission;

/**
 * The measured rate at which the prefill workers chew through prompt tokens, the denominator of
 * every wait prediction and Retry-After. Only busy time counts (time with prefill work in
 * flight), so an idle minute does not make the cluster look slow. Exponentially weighted over
 * about {@code horizonSeconds} of busy time; before the first measurement, the configured guess.
 *
 * <p>Short prompts measure per-request overhead (HTTP hops, the KV handoff), not prefill
 * compute: a stream of 10-token requests would "measure" a GPU at 100 tokens/s and then reject
 * a long prompt as hopeless. So a sample counts only when it holds enough tokens, at enough
 * tokens per request, for compute to dominate; traffic of short prompts leaves the estimate
 * where it was (and predictions stay off until a real measurement exists). Guarded by the
 * controller's lock.
 */
final class PrefillThroughput {
    /** A sample must hold at least this many prompt tokens... */
    static final long MIN_SAMPLE_TOKENS = 2048;
    /** ...at least this many per completed request. */
    static final long MIN_TOKENS_PER_REQUEST = 256;

    private final double horizonSeconds;
    private double tokensPerSecond;
    private boolean measured;
    private boolean busy;
    private long sampleTokens;
    private long sampleRequests;
    private long sampleBusyNanos;
    private long lastNanos;

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
    void busy(boolean nowBusy, long now) {
        if (nowBusy && !busy) {
            busy = true;
            lastNanos = now;
        } else if (!nowBusy && busy) {
            sampleBusyNanos += now - lastNanos;
            busy = false;
            if (sampleTokens < MIN_SAMPLE_TOKENS) {
                return; // keep accumulating over the next busy periods
            }
            fold();
        }
    }

    /** A prefill finished {@code tokens} prompt tokens. */
    void completed(long tokens, long now) {
        sampleTokens += tokens;
        sampleRequests++;
        if (busy) {
            sampleBusyNanos += now - lastNanos;
            lastNanos = now;
        }
        // fold at least every 100 ms of busy time so the estimate follows load changes
        if (sampleBusyNanos >= 100_000_000L && sampleTokens >= MIN_SAMPLE_TOKENS) {
            fold();
        }
    }

    private void fold() {
        double seconds = sampleBusyNanos / 1e9;
        boolean computeBound = sampleRequests > 0 && sampleTokens / sampleRequests >= MIN_TOKENS_PER_REQUEST;
        if (seconds > 0 && computeBound) {
            double rate = sampleTokens / seconds;
            if (!measured) {
                tokensPerSecond = rate;
                measured = true;
            } else {
                double alpha = Math.min(1.0, seconds / horizonSeconds);
                tokensPerSecond += alpha * (rate - tokensPerSecond);
            }
        }
        sampleTokens = 0;
        sampleRequests = 0;
        sampleBusyNanos = 0;
    }
}
