package dev.sluice.testbed.load.offline;

import dev.sluice.testbed.load.offline.OfflineSchedule.Block;
import dev.sluice.testbed.load.offline.OfflineSchedule.Method;
import dev.sluice.testbed.load.offline.OfflineSchedule.Slot;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The best schedule of the prefill server it can find with full knowledge of the arrivals, for the
 * goodput ratio of the overload benchmark: maximise the number of jobs on time, dropping the rest.
 * The arrivals are first cut into independent blocks (a cut wherever every job sent so far is due
 * before the next is sent). Each block is solved by:
 * <ol>
 * <li>{@link EqualSizeGreedy} when all its jobs have one size and deadlines are agreeable:
 *     optimal by an exchange argument;</li>
 * <li>otherwise the best of several greedy rules, each improved by local search, and the
 *     {@link IntervalBound}; if they meet, that is optimal;</li>
 * <li>otherwise {@link BranchAndBound} from that incumbent within a node budget: optimal if it
 *     finishes (always for a dozen jobs, often for many more), else the best found with the smaller
 *     of the two bounds.</li>
 * </ol>
 * Every returned schedule is checked once more against the jobs before it is returned.
 */
public final class OfflineScheduler {
    /** Nodes of branch and bound per block: seconds at most for the benchmark's ~40-80 requests. */
    public static final long DEFAULT_NODE_BUDGET = 200_000;

    private OfflineScheduler() {
    }

    public static OfflineSchedule schedule(List<OfflineJob> jobs) {
        return schedule(jobs, DEFAULT_NODE_BUDGET);
    }

    public static OfflineSchedule schedule(List<OfflineJob> jobs, long nodeBudget) {
        Objects.requireNonNull(jobs, "jobs");
        List<Slot> slots = new ArrayList<>();
        List<Block> blocks = new ArrayList<>();
        int bound = 0;
        for (List<OfflineJob> block : blocks(jobs)) {
            Block solved = solve(block, nodeBudget, slots);
            blocks.add(solved);
            bound += solved.upperBound();
        }
        Method method = overall(blocks);
        check(slots);
        return new OfflineSchedule(slots, bound, method, blocks);
    }

    /** The jobs that can be on time at all, by release, cut where no job of one piece can meet one of the next. */
    static List<List<OfflineJob>> blocks(List<OfflineJob> jobs) {
        List<OfflineJob> sorted = new ArrayList<>();
        for (OfflineJob j : jobs) {
            if (j.canEverMeet()) {
                sorted.add(j);
            }
        }
        sorted.sort(Comparator.comparingDouble(OfflineJob::releaseMs).thenComparingInt(OfflineJob::index));
        List<List<OfflineJob>> out = new ArrayList<>();
        List<OfflineJob> current = new ArrayList<>();
        double due = Double.NEGATIVE_INFINITY;
        for (OfflineJob j : sorted) {
            if (!current.isEmpty() && j.releaseMs() > due + Timeline.EPS_MS) {
                out.add(current);
                current = new ArrayList<>();
            }
            current.add(j);
            due = Math.max(due, j.deadlineMs());
        }
        if (!current.isEmpty()) {
            out.add(current);
        }
        return out;
    }

    private static Block solve(List<OfflineJob> block, long nodeBudget, List<Slot> into) {
        double first = block.get(0).releaseMs();
        if (EqualSizeGreedy.applies(block)) {
            int[] seq = EqualSizeGreedy.schedule(block);
            add(block, seq, into);
            return new Block(first, block.size(), seq.length, seq.length, Method.GREEDY_OPTIMAL,
                    "greedy: equal sizes, agreeable deadlines");
        }
        int[] heuristic = heuristic(block);
        int bound = IntervalBound.of(block);
        if (heuristic.length >= bound) {
            add(block, heuristic, into);
            return new Block(first, block.size(), heuristic.length, heuristic.length, Method.EXACT,
                    "heuristic met the interval bound");
        }
        BranchAndBound.Result search = BranchAndBound.solve(block, heuristic, nodeBudget);
        add(block, search.best(), into);
        if (search.complete()) {
            return new Block(first, block.size(), search.best().length, search.best().length, Method.EXACT,
                    "branch and bound, " + search.nodes() + " nodes");
        }
        return new Block(first, block.size(), search.best().length, Math.min(bound, search.bound()),
                Method.HEURISTIC, "best found; branch and bound stopped after " + nodeBudget + " nodes");
    }

    /** The best of the greedy rules, each improved by local search (earlier rule on ties). */
    static int[] heuristic(List<OfflineJob> block) {
        int[] best = new int[0];
        for (Map.Entry<String, int[]> rule : GreedyRules.all(block).entrySet()) {
            int[] improved = LocalSearch.improve(block, rule.getValue());
            if (improved.length > best.length) {
                best = improved;
            }
        }
        return best;
    }

    private static void add(List<OfflineJob> block, int[] seq, List<Slot> into) {
        double[] starts = Timeline.starts(block, seq, seq.length, 0);
        if (starts == null) {
            throw new IllegalStateException("a solver returned a sequence with a late job");
        }
        for (int k = 0; k < seq.length; k++) {
            into.add(new Slot(block.get(seq[k]), starts[k]));
        }
    }

    private static Method overall(List<Block> blocks) {
        if (blocks.stream().anyMatch(b -> b.method() == Method.HEURISTIC)) {
            return Method.HEURISTIC;
        }
        if (!blocks.isEmpty() && blocks.stream().allMatch(b -> b.method() == Method.GREEDY_OPTIMAL)) {
            return Method.GREEDY_OPTIMAL;
        }
        return Method.EXACT;
    }

    /** Released, on time, one at a time: what every solver promised, checked independently. */
    private static void check(List<Slot> slots) {
        double free = Double.NEGATIVE_INFINITY;
        for (Slot s : slots) {
            if (s.startMs() < free || !s.job().onTimeIfStartedAt(s.startMs())) {
                throw new IllegalStateException("infeasible offline schedule at request " + s.job().index());
            }
            free = s.startMs() + s.job().prefillMs();
        }
    }
}
