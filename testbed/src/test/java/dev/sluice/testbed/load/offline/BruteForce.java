package dev.sluice.testbed.load.offline;

import java.util.List;

/**
 * Every sequence of every subset, each run left-shifted: the true optimum for a handful of jobs
 * (about e·n! sequences). Shares nothing with the solvers but {@link OfflineJob#onTimeIfStartedAt}.
 */
final class BruteForce {
    private BruteForce() {
    }

    static int optimum(List<OfflineJob> jobs) {
        if (jobs.size() > 9) {
            throw new IllegalArgumentException("brute force is for 9 jobs at most");
        }
        return best(jobs, new boolean[jobs.size()], 0, 0);
    }

    private static int best(List<OfflineJob> jobs, boolean[] used, double free, int done) {
        int best = done;
        for (int i = 0; i < jobs.size(); i++) {
            if (!used[i]) {
                OfflineJob j = jobs.get(i);
                double start = Math.max(free, j.releaseMs());
                if (j.onTimeIfStartedAt(start)) {
                    used[i] = true;
                    best = Math.max(best, best(jobs, used, start + j.prefillMs(), done + 1));
                    used[i] = false;
                }
            }
        }
        return best;
    }
}
