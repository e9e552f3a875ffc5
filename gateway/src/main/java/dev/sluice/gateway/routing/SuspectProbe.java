package dev.sluice.gateway.routing;

/**
 * Where the probing of a worker suspect of a silent stall stands (published by the health table).
 * Admission words its Retry-After from {@link #nextNanos}; {@code /admin/state}, {@code status} and
 * the metrics show it.
 *
 * @param nextNanos    {@link System#nanoTime()} by which the next probe will have started: the scheduled
 *                     start, or, while one runs, the latest start of the one after it should this one fail
 * @param verdictNanos while a probe runs, when its verdict is due at the latest; 0 when none runs
 * @param failed       probes that failed since the verdict (the back-off's exponent)
 */
public record SuspectProbe(long nextNanos, long verdictNanos, int failed) {

    /** A probe of the pair is out now. */
    public boolean running() {
        return verdictNanos != 0;
    }

    /** Whole seconds until {@link #nextNanos}, rounded up, at least 1: a client told this does not come back before the next probe. */
    public long retryAfterSeconds(long nowNanos) {
        long left = nextNanos - nowNanos;
        return Math.max(1, (left + 999_999_999L) / 1_000_000_000L);
    }
}
