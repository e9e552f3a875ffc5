package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The calibration's rate from a short and a long prompt's times ({@link PrefillCalibration#rate}). */
class PrefillCalibrationSlopeTest {
    @Test
    void theSlopeCancelsAFixedOverhead() {
        // 10,000 tokens/s plus 0.2 s of hops and handshake on each request: the plain ratio would say ~6,800
        double rate = PrefillCalibration.rate(1_024, 1_024 / 10_000.0 + 0.2, 4_096, 4_096 / 10_000.0 + 0.2);
        assertThat(rate).isCloseTo(10_000, within(1.0));
    }

    @Test
    void neverBelowTheLongPromptsOwnRate() {
        // the slope where it is above the long prompt's own rate; the long prompt's rate where the slope falls
        // below it (a short prompt slowed by noise makes the slope low: a rate biased low would refuse too much)
        double rate = PrefillCalibration.rate(1_024, 0.38, 4_096, 0.45);
        assertThat(rate).isCloseTo(3_072 / 0.07, within(1.0));
        double floored = PrefillCalibration.rate(1_024, 0.10, 4_096, 0.90);
        assertThat(floored).isCloseTo(4_096 / 0.90, within(1.0)); // slope 3,840 < 4,551
    }

    @Test
    void contradictoryTimingsGiveNoRate() {
        assertThat(PrefillCalibration.rate(1_024, 0.5, 4_096, 0.4)).isNaN();
        assertThat(PrefillCalibration.rate(1_024, 0.5, 4_096, 0.5)).isNaN();
        assertThat(PrefillCalibration.rate(4_096, 0.1, 4_096, 0.5)).isNaN();
        assertThat(PrefillCalibration.rate(1_024, 0, 4_096, 0.5)).isNaN();
    }
}
