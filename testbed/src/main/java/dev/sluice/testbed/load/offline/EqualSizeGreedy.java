package dev.sluice.testbed.load.offline;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * An optimal schedule when every job has the same prefill time and deadlines are agreeable (in
 * order of (release, deadline) the deadlines never decrease), as when every request has one
 * prompt size and one patience: whenever the server is free, drop the pending jobs that can no
 * longer be on time and start the first remaining one in (release, deadline) order; if none is
 * pending, wait for the next release. It never idles while a job that can still be on time waits.
 *
 * <p>Proof that it is optimal (exchange argument; p is the common prefill time):
 * <ol>
 * <li>Some optimal schedule runs its jobs in (release, deadline) order. If job i runs before job j
 *     but j comes first in that order (r_j <= r_i, d_j <= d_i), swap them: they occupy slots of the
 *     same length p; j in i's slot starts at s_i >= r_i >= r_j and ends before j's old end, so by
 *     d_j; i in j's slot starts after s_i + p > r_i and ends at s_j + p <= d_j <= d_i. Nothing else
 *     moves.</li>
 * <li>Induction on the jobs the greedy starts. Suppose an optimal schedule S in that order agrees
 *     with the greedy up to the moment F the server is free, and let s be S's next job, started at
 *     σ >= max(F, r_s). A job the greedy dropped before could not be on time then, so not later
 *     either: s is not one of them. At max(F, r_s) the job s is released and can be on time, so the
 *     greedy starts some job g at a time t <= max(F, r_s) <= σ. If s was released by t, it could be
 *     on time at t (it can at the later σ), so g comes no later than s in the order; if r_s > t,
 *     then r_g <= t < r_s and again g comes first. If g = s, S agrees one job further (moving s to
 *     t <= σ keeps everything on time). Otherwise g is not in S (S is in order and s is its first
 *     job after F): replace s by g. g runs in [t, t + p], ends by σ + p, and is on time (the greedy
 *     checked); the later jobs of S keep their times. Same count, and it agrees one job further.</li>
 * </ol>
 * Deliberate idling cannot help: step 2 shows an optimal schedule that starts g at t, the first
 * moment the greedy could. Both hypotheses matter: with unequal sizes a long early job can block two
 * short later ones, and without agreeable deadlines an urgent job released later can be blocked by
 * a patient one started now. Then the other solvers are used; {@link #applies} checks both exactly.
 */
final class EqualSizeGreedy {
    private EqualSizeGreedy() {
    }

    static boolean applies(List<OfflineJob> jobs) {
        if (jobs.isEmpty()) {
            return true;
        }
        double p = jobs.get(0).prefillMs();
        for (OfflineJob j : jobs) {
            if (j.prefillMs() != p) {
                return false;
            }
        }
        Integer[] order = byReleaseThenDeadline(jobs);
        for (int k = 1; k < order.length; k++) {
            if (jobs.get(order[k]).deadlineMs() < jobs.get(order[k - 1]).deadlineMs()) {
                return false;
            }
        }
        return true;
    }

    /** The greedy's sequence (positions in {@code jobs}); optimal when {@link #applies}. */
    static int[] schedule(List<OfflineJob> jobs) {
        Integer[] order = byReleaseThenDeadline(jobs);
        List<Integer> pending = new ArrayList<>();
        int[] out = new int[jobs.size()];
        int count = 0;
        int next = 0;
        double free = Double.NEGATIVE_INFINITY;
        while (true) {
            if (pending.isEmpty()) {
                if (next == order.length) {
                    break;
                }
                free = Math.max(free, jobs.get(order[next]).releaseMs());
            }
            while (next < order.length && jobs.get(order[next]).releaseMs() <= free) {
                pending.add(order[next++]);
            }
            int chosen = -1;
            while (!pending.isEmpty()) {
                int head = pending.remove(0);
                if (jobs.get(head).onTimeIfStartedAt(free)) {
                    chosen = head;
                    break;
                }
            }
            if (chosen >= 0) {
                out[count++] = chosen;
                free += jobs.get(chosen).prefillMs();
            }
        }
        return Arrays.copyOf(out, count);
    }

    private static Integer[] byReleaseThenDeadline(List<OfflineJob> jobs) {
        Integer[] order = new Integer[jobs.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.<Integer>comparingDouble(i -> jobs.get(i).releaseMs())
                .thenComparingDouble(i -> jobs.get(i).deadlineMs()).thenComparingInt(i -> i));
        return order;
    }
}
