package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The rate's relative spread: assumed until three samples, then their relative errors' root mean square. */
class RateSpreadTest {
    @Test
    void assumedUntilThreeSamplesThenMeasured() {
        RateSpread s = new RateSpread();
        assertThat(s.relative()).isEqualTo(RateSpread.UNSEEN);
        s.observed(2_550, 2_500);
        s.observed(2_450, 2_500);
        assertThat(s.relative()).isEqualTo(RateSpread.UNSEEN);
        s.observed(2_550, 2_500);
        assertThat(s.relative()).isCloseTo(0.02, within(1e-9)); // every sample 2 % off
        for (int i = 0; i < 100; i++) {
            s.observed(2_500, 2_500);
        }
        assertThat(s.relative()).as("a steady rate narrows it").isLessThan(0.001);
        s.observed(Double.NaN, 2_500);
        s.observed(2_500, 0);
        assertThat(s.relative()).as("nonsense ignored").isLessThan(0.001);
    }

    @Test
    void aRateThatDriftsWidensItUpToTheCap() {
        RateSpread s = new RateSpread();
        for (int i = 0; i < 5; i++) {
            s.observed(2_300, 2_500); // the machine slowed: samples 8 % under the estimate
        }
        assertThat(s.relative()).isCloseTo(0.08, within(1e-9));
        for (int i = 0; i < 5; i++) {
            s.observed(625, 2_500); // four times slower: the estimate is wrong, not noisy
        }
        assertThat(s.relative()).isEqualTo(RateSpread.MAX);
    }
}
