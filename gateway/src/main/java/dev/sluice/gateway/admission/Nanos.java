package dev.sluice.gateway.admission;

import java.time.Duration;

/**
 * Saturating arithmetic on {@code System.nanoTime()} instants and spans: a deadline computed from a
 * client's numbers (a huge {@code max_tokens} at a slow decode pace, an hour-long queue timeout) ends
 * at {@link Long#MAX_VALUE}, "never", instead of wrapping round to a time in the past.
 */
final class Nanos {
    private Nanos() {
    }

    /** {@code at + span}, at most {@link Long#MAX_VALUE} (and at least {@link Long#MIN_VALUE}). */
    static long plus(long at, long span) {
        long sum = at + span;
        // overflow iff both operands have the sign opposite to the sum's (Hacker's Delight 2-13)
        if (((at ^ sum) & (span ^ sum)) < 0) {
            return span > 0 ? Long.MAX_VALUE : Long.MIN_VALUE;
        }
        return sum;
    }

    /** {@code at} plus {@code seconds} (NaN counts as none, infinity as forever), saturating. */
    static long plusSeconds(long at, double seconds) {
        if (!(seconds == seconds)) {
            return at;
        }
        return plus(at, (long) (seconds * 1e9)); // a double past the long range casts to its bound
    }

    /** A duration's nanoseconds, {@link Long#MAX_VALUE} when it is longer than 292 years. */
    static long of(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }
}
