package dev.sluice.gateway.health;

import dev.sluice.gateway.config.HealthConfig;
import java.util.function.DoubleSupplier;

/**
 * How long after one stall probe's start the next one starts: {@code probe_interval x 2^failed},
 * at most {@code probe_max_interval}, drawn from [(1 - {@value #JITTER}) x that, that]. Jitter only
 * shortens the wait, so the cap holds exactly (a pair that heals serves again within it), and
 * gateways that saw the same stall at the same moment do not probe in step.
 */
final class ProbeBackoff {
    /** The share of a wait that jitter may take off. */
    static final double JITTER = 0.2;

    private ProbeBackoff() {
    }

    /** The wait before the probe that follows {@code failed} failed probes (0: the first after the verdict). */
    static long delayNanos(HealthConfig.StallPanic config, int failed, DoubleSupplier random) {
        long base = config.probeInterval().toNanos();
        long max = config.probeMaxInterval().toNanos();
        long wait = failed >= 62 || base > (max >> Math.min(failed, 62)) ? max : Math.min(max, base << failed);
        return wait - (long) (wait * JITTER * random.getAsDouble());
    }

    /** The shortest wait {@link #delayNanos} can draw (what tests and clients can count on). */
    static long minDelayNanos(HealthConfig.StallPanic config, int failed) {
        return delayNanos(config, failed, () -> 1.0);
    }
}
