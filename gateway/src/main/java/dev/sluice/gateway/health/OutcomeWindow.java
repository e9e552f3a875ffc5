package dev.sluice.gateway.health;

import java.util.ArrayDeque;

/**
 * The outcomes of one worker's recent requests over a sliding time window, for outlier
 * detection: failures in a row, and the share of failures in the window. Bounded: at most
 * {@link #MAX_OUTCOMES} kept (the oldest go first). Guarded by the health table's lock.
 */
final class OutcomeWindow {
    static final int MAX_OUTCOMES = 4096;

    private final long windowNanos;
    private final ArrayDeque<long[]> outcomes = new ArrayDeque<>();
    private int failures;
    private int consecutiveFailures;

    OutcomeWindow(long windowNanos) {
        this.windowNanos = windowNanos;
    }

    void add(long now, boolean failed) {
        trim(now);
        if (outcomes.size() == MAX_OUTCOMES) {
            drop();
        }
        outcomes.addLast(new long[] {now, failed ? 1 : 0});
        if (failed) {
            failures++;
            consecutiveFailures++;
        } else {
            consecutiveFailures = 0;
        }
    }

    /** Failures in a row, the newest outcomes, counting only those still inside the window. */
    int consecutiveFailures() {
        return consecutiveFailures;
    }

    int total(long now) {
        trim(now);
        return outcomes.size();
    }

    double failureRatio(long now) {
        trim(now);
        return outcomes.isEmpty() ? 0 : (double) failures / outcomes.size();
    }

    void clear() {
        outcomes.clear();
        failures = 0;
        consecutiveFailures = 0;
    }

    private void trim(long now) {
        while (!outcomes.isEmpty() && now - outcomes.peekFirst()[0] > windowNanos) {
            drop();
        }
        consecutiveFailures = Math.min(consecutiveFailures, outcomes.size());
    }

    private void drop() {
        long[] o = outcomes.pollFirst();
        if (o[1] == 1) {
            failures--;
        }
    }
}
