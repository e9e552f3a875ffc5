package dev.sluice.gateway.cacheview;

/**
 * Exponential backoff with a cap: each failure doubles the wait, from {@code first} up to
 * {@code max}; a success starts again at {@code first}. Not thread-safe (one stream's, on its
 * owner's thread).
 */
final class Backoff {
    private final long firstNanos;
    private final long maxNanos;
    private long nextNanos;

    Backoff(long firstNanos, long maxNanos) {
        this.firstNanos = firstNanos;
        this.maxNanos = maxNanos;
        this.nextNanos = firstNanos;
    }

    /** The wait after this failure; the next one waits twice as long, up to the cap. */
    long failed() {
        long wait = nextNanos;
        nextNanos = Math.min(maxNanos, nextNanos * 2);
        return wait;
    }

    void reset() {
        nextNanos = firstNanos;
    }
}
