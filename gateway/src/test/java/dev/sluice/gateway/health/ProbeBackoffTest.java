package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.HealthConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The stall probes' back-off: doubling from probe_interval, capped at probe_max_interval, jitter only shortening. */
class ProbeBackoffTest {
    private static final HealthConfig.StallPanic DEFAULT = HealthConfig.StallPanic.DEFAULT;

    @Test
    void doublesFromTheIntervalUpToTheCap() {
        long[] seconds = new long[8];
        for (int n = 0; n < seconds.length; n++) {
            seconds[n] = ProbeBackoff.delayNanos(DEFAULT, n, () -> 0.0) / 1_000_000_000L;
        }
        assertThat(seconds).containsExactly(1, 2, 4, 8, 10, 10, 10, 10);
    }

    @Test
    void jitterTakesOffAtMostAFifth() {
        assertThat(ProbeBackoff.minDelayNanos(DEFAULT, 0)).isEqualTo(800_000_000L);
        assertThat(ProbeBackoff.delayNanos(DEFAULT, 0, () -> 0.5)).isEqualTo(900_000_000L);
        assertThat(ProbeBackoff.minDelayNanos(DEFAULT, 10)).isEqualTo(8_000_000_000L);
        assertThat(ProbeBackoff.delayNanos(DEFAULT, 10, () -> 0.0)).as("the cap holds exactly")
                .isEqualTo(10_000_000_000L);
    }

    @Test
    void manyFailuresNeitherOverflowNorPassTheCap() {
        HealthConfig.StallPanic wide = new HealthConfig.StallPanic(true, Duration.ofSeconds(3), Duration.ofMillis(10),
                Duration.ofDays(365));
        for (int n : new int[] {30, 40, 61, 62, 63, 64, 1000, Integer.MAX_VALUE}) {
            long d = ProbeBackoff.delayNanos(wide, n, () -> 0.0);
            assertThat(d).as("after %d failures", n).isPositive().isLessThanOrEqualTo(Duration.ofDays(365).toNanos());
        }
    }
}
