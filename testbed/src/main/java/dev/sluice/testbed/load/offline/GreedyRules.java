package dev.sluice.testbed.load.offline;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Constructive heuristics, each a plain rule with no guarantee; {@link LocalSearch} improves on
 * the best of them. Results are sequences of positions in the job list, on time when run
 * left-shifted from time zero.
 */
final class GreedyRules {
    private GreedyRules() {
    }

    /** Every rule's sequence, by rule name, in a fixed order. */
    static Map<String, int[]> all(List<OfflineJob> jobs) {
        Map<String, int[]> out = new LinkedHashMap<>();
        out.put("fcfs-drop-late", dispatch(jobs, Comparator.comparingDouble(OfflineJob::releaseMs)));
        out.put("edf-drop-late", dispatch(jobs, Comparator.comparingDouble(OfflineJob::deadlineMs)));
        out.put("shortest-first", dispatch(jobs, Comparator.comparingDouble(OfflineJob::prefillMs)));
        out.put("edf-drop-longest", edfDropLongest(jobs));
        out.put("insert-by-deadline", insertion(jobs, Comparator.comparingDouble(OfflineJob::deadlineMs)));
        out.put("insert-shortest-first", insertion(jobs, Comparator.comparingDouble(OfflineJob::prefillMs)));
        return out;
    }

    /**
     * List scheduling: whenever the server is free, start the released job that can still be on
     * time and comes first by {@code rule} (jobs that cannot be on time any more are dropped); if
     * none is released, wait for the next release.
     */
    static int[] dispatch(List<OfflineJob> jobs, Comparator<OfflineJob> rule) {
        int n = jobs.size();
        boolean[] done = new boolean[n];
        int[] out = new int[n];
        int count = 0;
        double free = Double.NEGATIVE_INFINITY;
        while (true) {
            int chosen = -1;
            double nextRelease = Double.POSITIVE_INFINITY;
            for (int i = 0; i < n; i++) {
                OfflineJob j = jobs.get(i);
                if (done[i]) {
                    continue;
                }
                if (!j.onTimeIfStartedAt(Math.max(free, j.releaseMs()))) {
                    done[i] = true; // late from now on
                } else if (j.releaseMs() > free) {
                    nextRelease = Math.min(nextRelease, j.releaseMs());
                } else if (chosen < 0 || rule.compare(j, jobs.get(chosen)) < 0) {
                    chosen = i;
                }
            }
            if (chosen >= 0) {
                done[chosen] = true;
                out[count++] = chosen;
                free += jobs.get(chosen).prefillMs();
            } else if (nextRelease < Double.POSITIVE_INFINITY) {
                free = nextRelease;
            } else {
                return Arrays.copyOf(out, count);
            }
        }
    }

    /**
     * Moore–Hodgson carried over to release dates: add jobs in deadline order to a sequence kept
     * in deadline order; when the left-shifted sequence has a late job, remove the longest job whose
     * removal makes it feasible again (the one just added always does).
     */
    static int[] edfDropLongest(List<OfflineJob> jobs) {
        Integer[] byDeadline = sorted(jobs, Comparator.comparingDouble(OfflineJob::deadlineMs));
        List<Integer> seq = new ArrayList<>();
        for (int i : byDeadline) {
            seq.add(i);
            if (Timeline.starts(jobs, toArray(seq), seq.size(), 0) != null) {
                continue;
            }
            List<Integer> byLength = new ArrayList<>(seq);
            byLength.sort(Comparator.<Integer>comparingDouble(k -> jobs.get(k).prefillMs()).reversed());
            for (int k : byLength) {
                List<Integer> without = new ArrayList<>(seq);
                without.remove(Integer.valueOf(k));
                if (Timeline.starts(jobs, toArray(without), without.size(), 0) != null) {
                    seq = without;
                    break;
                }
            }
        }
        return toArray(seq);
    }

    /** Jobs taken in {@code rule} order, each put where it fits and delays the rest least. */
    static int[] insertion(List<OfflineJob> jobs, Comparator<OfflineJob> rule) {
        int[] seq = new int[0];
        for (int i : sorted(jobs, rule)) {
            int[] longer = LocalSearch.insertAt(jobs, seq, i);
            if (longer != null) {
                seq = longer;
            }
        }
        return seq;
    }

    static Integer[] sorted(List<OfflineJob> jobs, Comparator<OfflineJob> rule) {
        Integer[] order = new Integer[jobs.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.<Integer, OfflineJob>comparing(jobs::get, rule).thenComparingInt(i -> i));
        return order;
    }

    static int[] toArray(List<Integer> list) {
        return list.stream().mapToInt(Integer::intValue).toArray();
    }
}
