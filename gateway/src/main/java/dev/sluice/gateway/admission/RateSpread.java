package dev.sluice.gateway.admission;

/**
 * How far a prefill worker's measured rate strays from the estimate it is folded into: each sample's
 * relative error against the estimate before it (a one-step-ahead error, so drift counts as well as
 * noise), root mean square, exponentially weighted over about the last ten samples. A prediction
 * {@code T} seconds of prefill ahead is then uncertain by about {@code spread x T}: the door's margin
 * ({@link Forecast#newcomer}) grows with the wait it predicts. {@link #UNSEEN} until
 * {@link #MIN_SAMPLES} samples are in. Under the admission lock.
 */
final class RateSpread {
    private static final double WEIGHT = 0.1;
    static final int MIN_SAMPLES = 3;
    /**
     * The spread assumed before {@link #MIN_SAMPLES} samples: 2 %, about how far a rate kept from the run
     * before was from the one measured next on a quiet machine (bench-overload 3: 2,462 kept, the simulated
     * prefill 2,500 nominal). A kept rate measured under other load is off by more (10-25 %): this margin
     * does not cover that, the reviews still do.
     */
    static final double UNSEEN = 0.02;
    /**
     * The most it is taken to be: 10 % (a margin of a fifth of the prefill ahead). Past that the estimate
     * is not noisy but wrong (a worker slowed or sped up several times over), which its own weighting and
     * the reviews follow; a margin of the samples' full error (58 % seen in a test that slows the prefill
     * 4 x) would refuse at the door anything waiting more than about half its deadline.
     */
    static final double MAX = 0.1;
    private double meanSquare;
    private long samples;

    /** A sample of {@code sample} tokens/s folded into an estimate of {@code estimate}. */
    void observed(double sample, double estimate) {
        if (!(sample > 0) || !(estimate > 0) || !Double.isFinite(sample) || !Double.isFinite(estimate)) {
            return;
        }
        double e = sample / estimate - 1;
        samples++;
        meanSquare = samples == 1 ? e * e : meanSquare + WEIGHT * (e * e - meanSquare);
    }

    /** The relative spread of the rate: 0.03 is 3 %. */
    double relative() {
        return samples < MIN_SAMPLES ? UNSEEN : Math.min(MAX, Math.sqrt(meanSquare));
    }
}
