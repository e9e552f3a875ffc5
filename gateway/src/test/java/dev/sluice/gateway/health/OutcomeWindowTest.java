package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class OutcomeWindowTest {
    private static final long S = 1_000_000_000L;

    @Test
    void countsFailuresInsideTheWindowOnly() {
        OutcomeWindow w = new OutcomeWindow(10 * S);
        w.add(0, true);
        w.add(1 * S, false);
        w.add(2 * S, true);
        w.add(3 * S, true);
        assertThat(w.total(3 * S)).isEqualTo(4);
        assertThat(w.failureRatio(3 * S)).isEqualTo(0.75);
        assertThat(w.consecutiveFailures()).isEqualTo(2);

        // at 11.5 s the outcomes at 0 and 1 s have left the window
        assertThat(w.total(11_500_000_000L)).isEqualTo(2);
        assertThat(w.failureRatio(11_500_000_000L)).isEqualTo(1.0);
        // all gone: no failures in a row can outlive the window
        assertThat(w.total(20 * S)).isZero();
        assertThat(w.consecutiveFailures()).isZero();
    }

    @Test
    void keepsAtMostTheBoundAcrossTheRingsWrap() {
        OutcomeWindow w = new OutcomeWindow(1_000 * S);
        for (int i = 0; i < 3 * OutcomeWindow.MAX_OUTCOMES; i++) {
            w.add(i, i % 4 == 0); // one failure in four
        }
        assertThat(w.total(3L * OutcomeWindow.MAX_OUTCOMES)).isEqualTo(OutcomeWindow.MAX_OUTCOMES);
        assertThat(w.failureRatio(3L * OutcomeWindow.MAX_OUTCOMES)).isEqualTo(0.25);
        w.clear();
        assertThat(w.total(0)).isZero();
        w.add(5, true);
        assertThat(w.failureRatio(5)).isEqualTo(1.0);
    }
}
