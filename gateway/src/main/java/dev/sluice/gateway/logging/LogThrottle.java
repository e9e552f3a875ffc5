package dev.sluice.gateway.logging;

/**
 * At most {@code perSecond} log lines of one kind per second; the rest are counted and reported in
 * one summary line when the next second's first line is allowed. For the lines a client can
 * cause at will (rejections, bad input): a flood of 429s or of malformed requests must cost the
 * gateway its counters, not a log line each — formatting and writing them would take the CPU the
 * rejections are meant to save, and fill the journal. Metrics still count every request exactly.
 * Thread-safe (requests end on every event loop); the lock is held for a few field updates.
 */
public final class LogThrottle {
    private static final long SECOND = 1_000_000_000L;

    private final int perSecond;
    private long windowStart = Long.MIN_VALUE;
    private int used;
    private long suppressed;

    public LogThrottle(int perSecond) {
        if (perSecond < 1) {
            throw new IllegalArgumentException("perSecond must be at least 1: " + perSecond);
        }
        this.perSecond = perSecond;
    }

    /**
     * Whether a line may be written at {@code nowNanos}. Returns -1 when it may not; otherwise the
     * number of lines suppressed since the last allowed one (0 mostly), for the caller to mention.
     */
    public synchronized long tryAcquire(long nowNanos) {
        if (windowStart == Long.MIN_VALUE || nowNanos - windowStart >= SECOND) {
            windowStart = nowNanos;
            used = 0;
        }
        if (used >= perSecond) {
            suppressed++;
            return -1;
        }
        used++;
        long s = suppressed;
        suppressed = 0;
        return s;
    }
}
