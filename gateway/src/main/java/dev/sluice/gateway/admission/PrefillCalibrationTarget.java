package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.PrefillCalibrationConfig.OnStart;
import dev.sluice.gateway.routing.Worker;

/**
 * Admission's side of the prefill rates' calibration ({@code admission.prefill_rate.calibration}): which
 * workers want one, whether client work would spoil one now, and where its result goes. The calibration
 * itself (the gateway's own requests to the worker) is the {@code pd} package's; it holds no admission
 * ticket and counts in no budget. Safe from any thread: every call takes the admission lock.
 */
public final class PrefillCalibrationTarget {
    private final Decisions decisions;
    private final PrefillRates rates;
    private final Runnable reviewDue; // under the lock
    private final Runnable kick;

    PrefillCalibrationTarget(Decisions decisions, PrefillRates rates, Runnable reviewDue, Runnable kick) {
        this.decisions = decisions;
        this.rates = rates;
        this.reviewDue = reviewDue;
        this.kick = kick;
    }

    /**
     * Whether {@code w} is to be calibrated under {@code mode}: with {@code auto} only while its rate is the
     * untrusted guess; with {@code always} also while it is a kept rate (the state file, the fleet), which
     * may be stale. A rate configured, read from the worker's counters or already measured on client
     * traffic is never re-measured: each is better evidence than a few prompts of random words.
     */
    public boolean wants(Worker w, OnStart mode) {
        PrefillRates.Source s = decisions.read(() -> rates.sourceOf(w));
        return switch (mode) {
            case NEVER -> false;
            case AUTO -> s == PrefillRates.Source.GUESS;
            case ALWAYS -> s == PrefillRates.Source.GUESS || s == PrefillRates.Source.STATE_FILE;
        };
    }

    /** Whether {@code w} has client prompts in prefill: a calibration timed now would be slowed by them. */
    public boolean busy(Worker w) {
        return decisions.read(() -> rates.busy(w));
    }

    /** {@code w}'s calibrated rate: from now on its prior, and the queue is re-judged with it at once. */
    public void calibrated(Worker w, double tokensPerSecond) {
        decisions.update(() -> {
            rates.calibrated(w, tokensPerSecond);
            reviewDue.run();
        });
        kick.run();
    }

    /** {@code w}'s rate and where it comes from now, for the calibration's log line. */
    public String rateOf(Worker w) {
        return decisions.read(() -> Math.round(rates.rateOf(w)) + " (" + rates.sourceOf(w).label() + ")");
    }
}
