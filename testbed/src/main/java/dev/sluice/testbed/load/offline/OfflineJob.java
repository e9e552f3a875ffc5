package dev.sluice.testbed.load.offline;

/**
 * One request as the offline scheduler sees it: it may not start its prefill before
 * {@code releaseMs} (its send time), the prefill takes {@code prefillMs} of the one prefill
 * server, and it meets its SLOs iff that prefill completes by {@code deadlineMs} (the SLOs and
 * the client's patience, less the fixed overhead after the prefill, already folded in). Times are
 * milliseconds since the run's first send; {@code deadlineMs} may be infinite.
 *
 * @param index        the request's {@code index} in the load report
 * @param requestClass its class, or null
 */
public record OfflineJob(int index, String requestClass, double releaseMs, double prefillMs, double deadlineMs) {

    public OfflineJob {
        if (!(releaseMs >= 0) || Double.isInfinite(releaseMs)) {
            throw new IllegalArgumentException("releaseMs: " + releaseMs + " (expected: finite, >= 0)");
        }
        if (!(prefillMs >= 0) || Double.isInfinite(prefillMs)) {
            throw new IllegalArgumentException("prefillMs: " + prefillMs + " (expected: finite, >= 0)");
        }
        if (Double.isNaN(deadlineMs)) {
            throw new IllegalArgumentException("deadlineMs: NaN (expected: a number or +Infinity)");
        }
    }

    /** Whether a prefill started at {@code startMs} is on time (see {@link Timeline#EPS_MS}). */
    public boolean onTimeIfStartedAt(double startMs) {
        return startMs >= releaseMs && Timeline.meets(startMs + prefillMs, deadlineMs);
    }

    /** Whether it can meet its deadline at all, starting the moment it is sent. */
    public boolean canEverMeet() {
        return onTimeIfStartedAt(releaseMs);
    }
}
