package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class PredictionSlackTest {
    @Test
    void aSecondOfMarginUntilAFewPrefillsHaveShownTheirOwn() {
        PredictionSlack s = new PredictionSlack();
        assertThat(s.seconds()).isEqualTo(PredictionSlack.UNSEEN_SECONDS);
        s.observed(2.0);
        s.observed(2.0);
        assertThat(s.seconds()).isEqualTo(PredictionSlack.UNSEEN_SECONDS);
        s.observed(2.0);
        assertThat(s.seconds()).isCloseTo(2.0, within(1e-9));
    }

    @Test
    void earlyPrefillsLeaveNoMarginAndNeverANegativeOne() {
        PredictionSlack s = new PredictionSlack();
        for (int i = 0; i < 10; i++) {
            s.observed(-0.5);
        }
        assertThat(s.seconds()).isZero();
        s.observed(Double.NaN);
        assertThat(s.seconds()).isZero();
    }

    @Test
    void aSpreadWidensTheMarginBeyondTheMean() {
        PredictionSlack s = new PredictionSlack();
        for (int i = 0; i < 200; i++) {
            s.observed(i % 2 == 0 ? 0.1 : 0.5); // mean 0.3, deviation 0.2
        }
        assertThat(s.seconds()).isBetween(0.6, 0.75);
    }

    @Test
    void aWrongStartIsForgottenOnceThePredictionsAreRight() {
        PredictionSlack s = new PredictionSlack();
        for (int i = 0; i < 3; i++) {
            s.observed(5.0); // a rate that was wrong at first
        }
        assertThat(s.seconds()).isGreaterThan(4.0);
        for (int i = 0; i < 100; i++) { // about ten prefills' weight: the spread of the jump goes too
            s.observed(0.2);
        }
        assertThat(s.seconds()).isBetween(0.2, 0.3);
    }
}
