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
 * where it was (and predictions stay off until a real measurement exists).
 *
 * <p>The first completion of a busy period carries the request's fixed overhead (the HTTP hops,
 * the KV handoff, the first decode step) on top of its prefill; the later ones of the same period
 * do not, their predecessors' overhead overlapping their own prefill. So when the worker stays busy
 * after it, that first interval is left out and the next completion measures the compute alone
 * (a lone request, the worker idle after it, still counts: at light load it is all there is).
 * The very first completion a worker reports is never a sample, alone or not: it carries the cold
 * start (the gateway's and the connections' first use, the first bootstrap handshake), which took
 * the first interval of bench-overload scenario 1 from 4.4 s of prefill to 7.1 s on a loaded
 * machine and would have had the gateway refuse, for a rate of 1,553 tokens/s instead of 2,500,
 * requests that could have been served.
 * Rejections cannot be taken back, so a rate biased low would cost requests that could have been
 * served. A prior ({@link #seed}) is the starting point the first samples are weighed against, not
 * a value they replace. Guarded by the controller's lock.
 */
final class PrefillThroughput {
    /** A sample must hold at least this many prompt tokens... */
    static final long MIN_SAMPLE_TOKENS = 2048;
    /** ...at least this many per completed request. */
    static final long MIN_TOKENS_PER_REQUEST = 256;

    private final double horizonSeconds;
    private double tokensPerSecond;
    private boolean measured;
    private boolean seeded;
    private boolean busy;
    private boolean periodStart; // no completion yet in this busy period
    private boolean warm; // a completion has been seen: the cold start is behind
    private long sampleTokens;
    private long sampleRequests;
    private long sampleBusyNanos;
    private long lastNanos;
    private final RateSpread spread = new RateSpread();

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

    /** How far its samples stray from the estimate, relative ({@link RateSpread}). */
    double relativeSpread() {
        return spread.relative();
    }

    /** Whether a completion has been seen on the worker: its cold start (if any) is behind. */
    boolean warm() {
        return warm;
    }

    /** The cold start is behind without a client completion: the gateway's own requests took it (calibration). */
    void warmed() {
        warm = true;
    }

    /** Call whenever in-flight prefill work goes from none to some, or from some to none. */
    void busy(boolean nowBusy, long now) {
        if (nowBusy && !busy) {
            busy = true;
            periodStart = true;
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

    /** Until measured: the prior the first samples are weighed against (exponentially, not replaced). */
    void seed(double prior) {
        if (!measured) {
            tokensPerSecond = prior;
            seeded = true;
        }
    }

    /** A prefill finished {@code tokens} prompt tokens (the worker idle after it, or not told). */
    void completed(long tokens, long now) {
        completed(tokens, now, false);
    }

    /** A prefill finished {@code tokens} prompt tokens; {@code stillBusy}: more is in flight on the worker. */
    void completed(long tokens, long now, boolean stillBusy) {
        boolean first = periodStart;
        periodStart = false;
        boolean cold = !warm;
        warm = true;
        if (cold || first && stillBusy && busy) {
            lastNanos = now; // its interval holds the request's fixed overhead: measured from here on
            return;
        }
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
            if (measured || seeded) {
                spread.observed(rate, tokensPerSecond); // the estimate (or prior) it would have predicted with
            }
            if (!measured && !seeded) {
                tokensPerSecond = rate;
                measured = true;
            } else {
                measured = true;
                double alpha = Math.min(1.0, seconds / horizonSeconds);
                tokensPerSecond += alpha * (rate - tokensPerSecond);
            }
        }
        sampleTokens = 0;
        sampleRequests = 0;
        sampleBusyNanos = 0;
    }
}
