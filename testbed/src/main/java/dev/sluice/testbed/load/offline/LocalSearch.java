package dev.sluice.testbed.load.offline;

import java.util.List;

/**
 * Improves a feasible sequence by local moves until none helps: insert jobs that fit (shortest
 * first, where they delay the rest least); remove one job and refill; move one job elsewhere and
 * refill. A move is taken when it schedules more jobs, or as many with less prefill time in total
 * (room for later insertions); the second objective strictly decreases, so it cannot cycle, and
 * the number of moves is capped besides. A heuristic: no guarantee beyond "no worse than where it
 * started".
 */
final class LocalSearch {
    private LocalSearch() {
    }

    static int[] improve(List<OfflineJob> jobs, int[] start) {
        int[] seq = fill(jobs, start);
        int movesLeft = 20 * jobs.size() + 20;
        while (movesLeft-- > 0) {
            int[] better = removeAndRefill(jobs, seq);
            if (better == null) {
                better = relocateAndRefill(jobs, seq);
            }
            if (better == null) {
                break;
            }
            seq = better;
        }
        return seq;
    }

    private static int[] removeAndRefill(List<OfflineJob> jobs, int[] seq) {
        for (int k = 0; k < seq.length; k++) {
            int[] candidate = fill(jobs, without(seq, k), seq[k]);
            if (better(jobs, candidate, seq)) {
                return candidate;
            }
        }
        return null;
    }

    private static int[] relocateAndRefill(List<OfflineJob> jobs, int[] seq) {
        for (int k = 0; k < seq.length; k++) {
            int[] rest = without(seq, k);
            for (int q = 0; q <= rest.length; q++) {
                if (q == k) {
                    continue;
                }
                int[] moved = with(rest, q, seq[k]);
                if (Timeline.starts(jobs, moved, moved.length, 0) == null) {
                    continue;
                }
                int[] candidate = fill(jobs, moved);
                if (better(jobs, candidate, seq)) {
                    return candidate;
                }
            }
        }
        return null;
    }

    /** More jobs, or as many with less prefill time in total. */
    private static boolean better(List<OfflineJob> jobs, int[] a, int[] b) {
        if (a.length != b.length) {
            return a.length > b.length;
        }
        return work(jobs, a) < work(jobs, b) - Timeline.EPS_MS;
    }

    private static double work(List<OfflineJob> jobs, int[] seq) {
        double sum = 0;
        for (int i : seq) {
            sum += jobs.get(i).prefillMs();
        }
        return sum;
    }

    static int[] fill(List<OfflineJob> jobs, int[] seq) {
        return fill(jobs, seq, -1);
    }

    /** Inserts jobs not in {@code seq}, shortest first, while any fits; {@code skip} is never inserted. */
    private static int[] fill(List<OfflineJob> jobs, int[] seq, int skip) {
        boolean[] in = new boolean[jobs.size()];
        for (int i : seq) {
            in[i] = true;
        }
        if (skip >= 0) {
            in[skip] = true;
        }
        Integer[] shortest = GreedyRules.sorted(jobs, java.util.Comparator.comparingDouble(OfflineJob::prefillMs));
        boolean inserted = true;
        while (inserted) {
            inserted = false;
            for (int i : shortest) {
                if (in[i]) {
                    continue;
                }
                int[] longer = insertAt(jobs, seq, i);
                if (longer != null) {
                    seq = longer;
                    in[i] = true;
                    inserted = true;
                }
            }
        }
        return seq;
    }

    /**
     * {@code seq} with job {@code i} inserted where it is on time, keeps the rest on time and
     * delays the next job least (earliest such place on ties), or null if it fits nowhere.
     */
    static int[] insertAt(List<OfflineJob> jobs, int[] seq, int i) {
        double[] starts = Timeline.starts(jobs, seq, seq.length, 0);
        if (starts == null) {
            throw new IllegalArgumentException("not a feasible sequence");
        }
        double[] latest = Timeline.latestStarts(jobs, seq, seq.length);
        OfflineJob job = jobs.get(i);
        double[] push = new double[seq.length + 1];
        java.util.Arrays.fill(push, Double.NaN);
        for (int q = 0; q <= seq.length; q++) {
            double prevFinish = q == 0 ? 0 : starts[q - 1] + jobs.get(seq[q - 1]).prefillMs();
            double s = Math.max(job.releaseMs(), prevFinish);
            if (!job.onTimeIfStartedAt(s)) {
                break; // later places start it no earlier
            }
            double finish = s + job.prefillMs();
            if (q == seq.length || finish <= latest[q] + Timeline.EPS_MS) {
                push[q] = q < seq.length ? Math.max(0, finish - starts[q]) : 0;
            }
        }
        while (true) {
            int best = -1;
            for (int q = 0; q <= seq.length; q++) {
                if (!Double.isNaN(push[q]) && (best < 0 || push[q] < push[best])) {
                    best = q;
                }
            }
            if (best < 0) {
                return null;
            }
            int[] candidate = with(seq, best, i);
            // the O(1) test above is exact up to the tolerance; the full check settles ties
            if (Timeline.starts(jobs, candidate, candidate.length, 0) != null) {
                return candidate;
            }
            push[best] = Double.NaN;
        }
    }

    static int[] without(int[] seq, int k) {
        int[] out = new int[seq.length - 1];
        System.arraycopy(seq, 0, out, 0, k);
        System.arraycopy(seq, k + 1, out, k, seq.length - k - 1);
        return out;
    }

    static int[] with(int[] seq, int q, int job) {
        int[] out = new int[seq.length + 1];
        System.arraycopy(seq, 0, out, 0, q);
        out[q] = job;
        System.arraycopy(seq, q, out, q + 1, seq.length - q);
        return out;
    }
}
