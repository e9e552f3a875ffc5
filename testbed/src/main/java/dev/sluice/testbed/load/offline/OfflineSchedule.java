package dev.sluice.testbed.load.offline;

import java.util.List;

/**
 * What the offline scheduler found: the on-time jobs with their prefill start times (the others
 * are dropped), a valid upper bound on how many can be on time, and how sure it is.
 *
 * @param slots      on-time jobs in start order
 * @param upperBound no schedule has more jobs on time; equal to {@code slots.size()} when optimal
 * @param blocks     the independent pieces the arrivals split into, each solved on its own
 */
public record OfflineSchedule(List<Slot> slots, int upperBound, Method method, List<Block> blocks) {

    public OfflineSchedule {
        slots = List.copyOf(slots);
        blocks = List.copyOf(blocks);
    }

    public int good() {
        return slots.size();
    }

    public boolean optimal() {
        return method != Method.HEURISTIC;
    }

    /** How the count was obtained, and therefore what it is worth. */
    public enum Method {
        /** Proved optimal: branch and bound finished, or a heuristic reached the upper bound. */
        EXACT("exact"),
        /** Optimal by the argument in {@code EqualSizeGreedy} (equal sizes, agreeable deadlines). */
        GREEDY_OPTIMAL("greedy-optimal"),
        /** Best found, not proved optimal: the optimum lies between it and {@code upperBound}. */
        HEURISTIC("heuristic");

        private final String label;

        Method(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /** One job's prefill: it starts at {@code startMs} and is on time. */
    public record Slot(OfflineJob job, double startMs) {
    }

    /**
     * An independent piece of the arrivals: every job of an earlier piece is due before the first
     * of this one is sent, so no schedule lets them interact.
     *
     * @param detail how this piece was solved, for people
     */
    public record Block(double firstReleaseMs, int jobs, int good, int upperBound, Method method, String detail) {
    }
}
