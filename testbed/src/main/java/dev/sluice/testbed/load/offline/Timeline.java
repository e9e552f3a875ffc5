package dev.sluice.testbed.load.offline;

import java.util.List;

/**
 * Left-shifted schedules of a sequence of jobs on the one prefill server: each job starts as soon
 * as it is released and the previous one is done. Every schedule the offline scheduler considers is
 * of this form, and that loses nothing: starting a job earlier never makes it or a later one late.
 * The one feasibility test ({@link #meets}) is shared by every solver and by the tests' brute
 * force, so they agree on ties.
 */
public final class Timeline {
    /** A completion up to 1 µs after the deadline counts as on time: float noise, not lateness. */
    public static final double EPS_MS = 1e-3;

    private Timeline() {
    }

    public static boolean meets(double finishMs, double deadlineMs) {
        return finishMs <= deadlineMs + EPS_MS;
    }

    /**
     * Start times of {@code order} (positions in {@code jobs}) run left-shifted from {@code fromMs},
     * or null if one of them would be late.
     */
    public static double[] starts(List<OfflineJob> jobs, int[] order, int length, double fromMs) {
        double[] starts = new double[length];
        double free = fromMs;
        for (int k = 0; k < length; k++) {
            OfflineJob j = jobs.get(order[k]);
            double s = Math.max(free, j.releaseMs());
            if (!meets(s + j.prefillMs(), j.deadlineMs())) {
                return null;
            }
            starts[k] = s;
            free = s + j.prefillMs();
        }
        return starts;
    }

    public static double[] starts(List<OfflineJob> jobs, int[] order) {
        return starts(jobs, order, order.length, 0);
    }

    /**
     * The latest start of each position such that it and everything after it, left-shifted, is
     * still on time (+Infinity past the end). With these, whether a job fits between positions
     * {@code k-1} and {@code k} is an O(1) question: its finish must meet its own deadline and be
     * no later than {@code latest[k]}.
     */
    static double[] latestStarts(List<OfflineJob> jobs, int[] order, int length) {
        double[] latest = new double[length + 1];
        latest[length] = Double.POSITIVE_INFINITY;
        for (int k = length - 1; k >= 0; k--) {
            OfflineJob j = jobs.get(order[k]);
            latest[k] = Math.min(j.deadlineMs(), latest[k + 1]) - j.prefillMs();
        }
        return latest;
    }
}
