package dev.sluice.testbed.load;

import java.time.Duration;
import java.util.Random;

/**
 * Send times of a run, as offsets from its start: a burst at time zero, a Poisson process
 * (exponential gaps at {@code rate} per second, from a seeded generator, so two runs with one seed
 * send at the same moments), or both. Bounded by a request count, a window, or both.
 */
final class Arrivals {
    private Arrivals() {
    }

    static long[] offsetsNanos(LoadSpec.Arrival arrival, int burst, double rate, int requests, Duration window,
                               long seed) {
        int cap = requests > 0 ? requests : Integer.MAX_VALUE;
        long limit = window == null ? Long.MAX_VALUE : window.toNanos();
        long[] out = new long[16];
        int n = 0;
        if (arrival != LoadSpec.Arrival.POISSON) {
            int b = Math.min(cap, burst > 0 ? burst : cap);
            out = grow(out, b);
            n = b; // zeros: all at once
        }
        if (arrival != LoadSpec.Arrival.BURST) {
            Random random = new Random(seed);
            double t = 0;
            while (n < cap) {
                t += -Math.log(1 - random.nextDouble()) / rate;
                long at = (long) (t * 1e9);
                if (at >= limit) {
                    break;
                }
                out = grow(out, n + 1);
                out[n++] = at;
            }
        }
        return java.util.Arrays.copyOf(out, n);
    }

    private static long[] grow(long[] a, int size) {
        return size <= a.length ? a : java.util.Arrays.copyOf(a, Math.max(size, a.length * 2));
    }
}
