package dev.sluice.testbed.load.offline;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Exact search: depth first over the job to start next (left-shifted, so a sequence fixes the
 * schedule), with three prunings, each of which only drops sequences that another one does at
 * least as well as:
 * <ul>
 * <li>bound: jobs so far plus a Moore–Hodgson bound on the jobs still able to be on time (releases
 *     relaxed to the moment the server is free, or, reversed, deadlines relaxed to the latest) is no
 *     more than the best found;</li>
 * <li>gaps: a job that would leave the server idle before it is not started next if another job
 *     could start earlier and finish within that idle time (doing it there first delays nothing);</li>
 * <li>dominance: the same set of jobs still able to be on time was already reached with the server
 *     free no later and at least as many jobs done.</li>
 * </ul>
 * When the search ends within its node budget the result is optimal. When it runs out, the best
 * found is returned with a valid bound: the largest bound of a node left unfinished (every
 * sequence not explored lies below one of them), or the best found if larger.
 */
final class BranchAndBound {
    /** {@code complete}: the search finished, so {@code best} is optimal and {@code bound == best.length}. */
    record Result(int[] best, boolean complete, int bound, long nodes) {
    }

    private final List<OfflineJob> jobs;
    private final int n;
    private final int words;
    private final int[] byDeadline;
    private final int[] byReleaseDescending;
    private final long budget;
    private final Map<Key, List<double[]>> seen = new HashMap<>();
    private final MooreHodgson.MaxHeap heap;
    private final int[] path;
    private int[] best;
    private long nodes;
    private boolean aborted;
    private int openBound;

    private BranchAndBound(List<OfflineJob> jobs, int[] incumbent, long budget) {
        this.jobs = jobs;
        this.n = jobs.size();
        this.words = (n + 63) / 64;
        this.byDeadline = unbox(GreedyRules.sorted(jobs, Comparator.comparingDouble(OfflineJob::deadlineMs)));
        this.byReleaseDescending = unbox(GreedyRules.sorted(jobs,
                Comparator.comparingDouble(OfflineJob::releaseMs).reversed()));
        this.budget = budget;
        this.heap = new MooreHodgson.MaxHeap(n);
        this.path = new int[n];
        this.best = incumbent.clone();
    }

    /** Searches at most {@code budget} nodes, starting from a feasible {@code incumbent}. */
    static Result solve(List<OfflineJob> jobs, int[] incumbent, long budget) {
        if (Timeline.starts(jobs, incumbent, incumbent.length, 0) == null) {
            throw new IllegalArgumentException("incumbent is not feasible");
        }
        BranchAndBound search = new BranchAndBound(jobs, incumbent, budget);
        long[] all = new long[search.words];
        for (int i = 0; i < search.n; i++) {
            if (jobs.get(i).canEverMeet()) {
                all[i >>> 6] |= 1L << i;
            }
        }
        search.node(0, all, 0);
        int bound = search.aborted ? Math.max(search.best.length, search.openBound) : search.best.length;
        return new Result(search.best, !search.aborted, bound, search.nodes);
    }

    private void node(double free, long[] avail, int depth) {
        nodes++;
        if (depth > best.length) {
            best = Arrays.copyOf(path, depth);
        }
        int ub = depth + bound(free, avail);
        if (ub <= best.length) {
            return;
        }
        if (nodes > budget) {
            aborted = true;
            openBound = Math.max(openBound, ub);
            return;
        }
        if (dominated(free, avail, depth)) {
            return;
        }
        for (int j : byDeadline) {
            if (!has(avail, j)) {
                continue;
            }
            OfflineJob job = jobs.get(j);
            double start = Math.max(free, job.releaseMs());
            if (start > free && somethingFitsBefore(free, avail, j, job.releaseMs())) {
                continue;
            }
            double next = start + job.prefillMs();
            long[] rest = new long[words];
            for (int k = 0; k < n; k++) {
                if (k != j && has(avail, k) && jobs.get(k).onTimeIfStartedAt(Math.max(next, jobs.get(k).releaseMs()))) {
                    rest[k >>> 6] |= 1L << k;
                }
            }
            path[depth] = j;
            node(next, rest, depth + 1);
            if (aborted) {
                openBound = Math.max(openBound, ub);
                return;
            }
        }
    }

    /** Another job could start strictly before {@code release} and be done by it. */
    private boolean somethingFitsBefore(double free, long[] avail, int j, double release) {
        for (int k = 0; k < n; k++) {
            if (k != j && has(avail, k)) {
                double s = Math.max(free, jobs.get(k).releaseMs());
                if (s < release && s + jobs.get(k).prefillMs() <= release) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Records the state; true if one at least as good was seen (same jobs left, free no later, no fewer done). */
    private boolean dominated(double free, long[] avail, int depth) {
        List<double[]> states = seen.computeIfAbsent(new Key(avail), k -> new ArrayList<>(2));
        for (double[] s : states) {
            if (s[0] <= free && s[1] >= depth) {
                return true;
            }
        }
        states.removeIf(s -> s[0] >= free && s[1] <= depth);
        states.add(new double[] {free, depth});
        return false;
    }

    /** Moore–Hodgson with releases relaxed, and with deadlines relaxed (time reversed): the smaller. */
    private int bound(double free, long[] avail) {
        heap.clear();
        double t = free;
        double latestDeadline = Double.NEGATIVE_INFINITY;
        int size = 0;
        for (int j : byDeadline) {
            if (has(avail, j)) {
                OfflineJob job = jobs.get(j);
                size++;
                latestDeadline = Math.max(latestDeadline, job.deadlineMs());
                heap.push(job.prefillMs());
                t += job.prefillMs();
                if (!Timeline.meets(t, job.deadlineMs())) {
                    t -= heap.pop();
                }
            }
        }
        int forward = heap.size();
        if (size <= 1 || Double.isInfinite(latestDeadline)) {
            return forward;
        }
        // reversed time: job j must run within [max(r_j, free), latestDeadline]; due in reversed
        // time latestDeadline - max(r_j, free), all available at once (a finish up to EPS late may
        // start the reversed schedule EPS early)
        heap.clear();
        t = -Timeline.EPS_MS;
        for (int j : byReleaseDescending) {
            if (has(avail, j)) {
                OfflineJob job = jobs.get(j);
                heap.push(job.prefillMs());
                t += job.prefillMs();
                if (!Timeline.meets(t, latestDeadline - Math.max(job.releaseMs(), free))) {
                    t -= heap.pop();
                }
            }
        }
        return Math.min(forward, heap.size());
    }

    private static boolean has(long[] set, int i) {
        return (set[i >>> 6] & (1L << i)) != 0;
    }

    private static int[] unbox(Integer[] a) {
        return Arrays.stream(a).mapToInt(Integer::intValue).toArray();
    }

    private record Key(long[] words) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && Arrays.equals(words, k.words);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(words);
        }
    }
}
