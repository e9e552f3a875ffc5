package dev.sluice.gateway.health;

/**
 * The outcomes of one worker's recent requests over a sliding time window, for outlier
 * detection: failures in a row, and the share of failures in the window. Bounded: at most
 * {@link #MAX_OUTCOMES} kept (the oldest go first). Guarded by the health table's lock.
 */
final class OutcomeWindow {
    static final int MAX_OUTCOMES = 4096;

    private final long windowNanos;
    // a ring of primitives: recording an outcome (every request, twice in PD) allocates nothing
    private final long[] at = new long[MAX_OUTCOMES];
    private final boolean[] failedAt = new boolean[MAX_OUTCOMES];
    private int head; // index of the oldest
    private int size;
    private int failures;
    private int consecutiveFailures;

    OutcomeWindow(long windowNanos) {
        this.windowNanos = windowNanos;
    }

    void add(long now, boolean failed) {
        trim(now);
        if (size == MAX_OUTCOMES) {
            drop();
        }
        int i = (head + size) % MAX_OUTCOMES;
        at[i] = now;
        failedAt[i] = failed;
        size++;
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
        return size;
    }

    double failureRatio(long now) {
        trim(now);
        return size == 0 ? 0 : (double) failures / size;
    }

    void clear() {
        head = 0;
        size = 0;
        failures = 0;
        consecutiveFailures = 0;
    }

    private void trim(long now) {
        while (size > 0 && now - at[head] > windowNanos) {
            drop();
        }
        consecutiveFailures = Math.min(consecutiveFailures, size);
    }

    private void drop() {
        if (failedAt[head]) {
            failures--;
        }
        head = (head + 1) % MAX_OUTCOMES;
        size--;
    }
}
