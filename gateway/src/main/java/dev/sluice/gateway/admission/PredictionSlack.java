package dev.sluice.gateway.admission;

/**
 * How much later than predicted prefills finish, learned from each one: at dispatch the gateway
 * predicts when the request's prefill will be done (what its worker still holds plus its prompt,
 * at the worker's rate); when its first token comes it learns the error. The deadline checks then
 * leave {@link #seconds()} of margin: the mean lateness plus two of its deviations (never below 0;
 * {@link #UNSEEN_SECONDS} until a few prefills have been seen),
 * so that a request predicted to get its first token just inside its deadline is refused at once
 * rather than prefilled for a client that gives up a few hundred milliseconds before it comes
 * (bench-overload 3 lost a client so: dispatched with 0.2 s to spare; the handoff and the first
 * decode step, which no rate counts, took more). Exponentially weighted over about the last ten
 * prefills, so a rate that was wrong at first stops counting once it is right. Under the
 * admission lock.
 */
final class PredictionSlack {
    private static final double WEIGHT = 0.1;
    /** Fewer samples than this: {@link #UNSEEN_SECONDS} (one odd prefill is not a pattern). */
    static final int MIN_SAMPLES = 3;
    /**
     * The margin before {@link #MIN_SAMPLES} prefills have been seen: a second, about what the first
     * requests of bench-overload 3 took between their prefill and their first token on a cold path,
     * while the rate itself came from only two prefills (a client given 0.2 s to spare then gave up).
     */
    static final double UNSEEN_SECONDS = 1.0;
    private double mean;
    private double variance;
    private long samples;

    /** A prefill finished {@code lateSeconds} after its prediction (negative: early). */
    void observed(double lateSeconds) {
        if (!Double.isFinite(lateSeconds)) {
            return;
        }
        samples++;
        if (samples == 1) {
            mean = lateSeconds;
            variance = 0;
            return;
        }
        double d = lateSeconds - mean;
        mean += WEIGHT * d;
        variance = (1 - WEIGHT) * (variance + WEIGHT * d * d);
    }

    /** The margin the deadline checks leave, in seconds. */
    double seconds() {
        return samples < MIN_SAMPLES ? UNSEEN_SECONDS : Math.max(0, mean + 2 * Math.sqrt(variance));
    }
}
