package dev.sluice.testbed.load.offline;

import java.util.List;
import java.util.TreeSet;

/**
 * A provably valid upper bound on how many jobs can be on time: cut the time line at points
 * {@code T_0 < T_1 < ... < T_k} (chosen among release times and latest start times) and sum, over
 * the pieces, a bound on the jobs that <em>start</em> in each piece.
 *
 * <p>Why it is valid: in any feasible schedule every on-time job starts in exactly one piece
 * {@code [T_a, T_b)}. The jobs starting there, run in their own order, also form a feasible
 * schedule of a relaxed problem: (forward) every job available at {@code T_a} with due date
 * {@code min(d_j, T_b + p_j)} (it starts before {@code T_b}), no release dates, which Moore–Hodgson
 * solves exactly; or (backward, by time reversal) every job due at the latest of those due dates
 * and released at {@code max(r_j, T_a)}, again Moore–Hodgson on the reversed time line. So each
 * piece's count is at most the smaller of the two Moore–Hodgson values, and the on-time total is at
 * most the sum. The best chain of cuts is a shortest path over the cut points (dynamic program,
 * O(K² n log n) for K cut points); with no cut it is plain Moore–Hodgson with releases relaxed.
 * It is a bound, not an optimum: the relaxations ignore releases (or deadlines) inside a piece.
 */
final class IntervalBound {
    private IntervalBound() {
    }

    static int of(List<OfflineJob> jobs) {
        int n = jobs.size();
        if (n == 0) {
            return 0;
        }
        TreeSet<Double> points = new TreeSet<>();
        double first = Double.POSITIVE_INFINITY;
        for (OfflineJob j : jobs) {
            first = Math.min(first, j.releaseMs());
        }
        for (OfflineJob j : jobs) {
            points.add(j.releaseMs());
            double latest = j.deadlineMs() - j.prefillMs();
            if (latest > first && !Double.isInfinite(latest)) {
                points.add(latest);
            }
        }
        double[] t = points.stream().mapToDouble(Double::doubleValue).toArray();
        int k = t.length;
        // best[b]: a bound on the jobs starting in [t[0], t[b])
        int[] best = new int[k + 1];
        best[0] = 0;
        for (int b = 1; b <= k; b++) {
            double end = b == k ? Double.POSITIVE_INFINITY : t[b];
            int min = Integer.MAX_VALUE;
            for (int a = 0; a < b; a++) {
                if (best[a] >= min) {
                    continue;
                }
                min = Math.min(min, best[a] + piece(jobs, t[a], end));
            }
            best[b] = min;
        }
        return best[k];
    }

    /** A bound on the jobs that can start in {@code [from, to)} and be on time. */
    static int piece(List<OfflineJob> jobs, double from, double to) {
        int n = jobs.size();
        double[] due = new double[n];
        double[] rel = new double[n];
        double[] p = new double[n];
        int m = 0;
        double latestDue = Double.NEGATIVE_INFINITY;
        for (OfflineJob j : jobs) {
            double start = Math.max(j.releaseMs(), from);
            if (start >= to || !j.onTimeIfStartedAt(start)) {
                continue;
            }
            due[m] = Math.min(j.deadlineMs(), to + j.prefillMs());
            rel[m] = start;
            p[m] = j.prefillMs();
            latestDue = Math.max(latestDue, due[m]);
            m++;
        }
        if (m <= 1) {
            return m;
        }
        int forward = MooreHodgson.maxOnTime(from, due, p, m);
        if (Double.isInfinite(latestDue)) {
            return forward;
        }
        double[] reversedDue = new double[m];
        for (int i = 0; i < m; i++) {
            reversedDue[i] = latestDue - rel[i];
        }
        // a finish up to EPS past its due date is on time: the reversed schedule may start EPS early
        return Math.min(forward, MooreHodgson.maxOnTime(-Timeline.EPS_MS, reversedDue, p, m));
    }
}
