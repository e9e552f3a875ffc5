package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RateEstimateTest {
    @Test
    void aGuessAloneOnAnIdleWorkerBoundsNothing() {
        assertThat(RateEstimate.upper(PrefillRates.Source.GUESS, 8_000, 0, 0)).isInfinite();
    }

    @Test
    void theWorkInFlightBoundsTheRateAndTheBoundNarrowsAsTheBusyPeriodGoesOnWithoutACompletion() {
        // 30,000 tokens sent, still in prefill: the start allowance first, then tokens / computing time
        assertThat(RateEstimate.upper(PrefillRates.Source.GUESS, 8_000, 30_000, 0.4)).isInfinite();
        double at1 = RateEstimate.upper(PrefillRates.Source.GUESS, 8_000, 30_000, 1.5);
        double at3 = RateEstimate.upper(PrefillRates.Source.GUESS, 8_000, 30_000, 3.5);
        assertThat(at1).isEqualTo(30_000);
        assertThat(at3).isEqualTo(10_000);
    }

    @Test
    void aMeasuredRateOrAPriorIsItsOwnBoundUnlessTheWorkInFlightSaysLess() {
        assertThat(RateEstimate.upper(PrefillRates.Source.MEASURED, 2_500, 0, 0)).isEqualTo(2_500);
        assertThat(RateEstimate.upper(PrefillRates.Source.CONFIGURED, 4_000, 11_000, 1.5)).isEqualTo(4_000);
        assertThat(RateEstimate.upper(PrefillRates.Source.TELEMETRY, 4_000, 11_000, 4.5)).isEqualTo(2_750);
    }
}
