package dev.sluice.gateway.logging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LogThrottleTest {
    private static final long MS = 1_000_000L;

    @Test
    void allowsThePerSecondBudgetThenCountsWhatItSuppressed() {
        LogThrottle t = new LogThrottle(3);
        assertThat(t.tryAcquire(0)).isZero();
        assertThat(t.tryAcquire(10 * MS)).isZero();
        assertThat(t.tryAcquire(20 * MS)).isZero();
        assertThat(t.tryAcquire(30 * MS)).isEqualTo(-1);
        assertThat(t.tryAcquire(999 * MS)).isEqualTo(-1);
        // the next second's first line reports the two it replaced, then the count starts over
        assertThat(t.tryAcquire(1000 * MS)).isEqualTo(2);
        assertThat(t.tryAcquire(1001 * MS)).isZero();
    }

    @Test
    void aQuietPeriodStartsAFreshWindow() {
        LogThrottle t = new LogThrottle(1);
        assertThat(t.tryAcquire(5 * MS)).isZero();
        assertThat(t.tryAcquire(6 * MS)).isEqualTo(-1);
        assertThat(t.tryAcquire(60_000 * MS)).isEqualTo(1);
        assertThat(t.tryAcquire(60_001 * MS)).isEqualTo(-1);
    }

    @Test
    void refusesANonsenseBudget() {
        assertThatThrownBy(() -> new LogThrottle(0)).isInstanceOf(IllegalArgumentException.class);
    }
}
