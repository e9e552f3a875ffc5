package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Deadlines from a client's numbers saturate at "never" instead of wrapping into the past. */
class NanosTest {
    @Test
    void sumsPastTheLongRangeSaturate() {
        assertThat(Nanos.plus(5, 7)).isEqualTo(12);
        assertThat(Nanos.plus(Long.MAX_VALUE - 1, 2)).isEqualTo(Long.MAX_VALUE);
        assertThat(Nanos.plus(1_000_000_000L, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
        assertThat(Nanos.plus(Long.MIN_VALUE + 1, -2)).isEqualTo(Long.MIN_VALUE);
        assertThat(Nanos.plus(-5, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE - 5);
    }

    @Test
    void secondsPastTheLongRangeSaturateAndNanAddsNothing() {
        assertThat(Nanos.plusSeconds(1_000, 1.5)).isEqualTo(1_500_001_000L);
        assertThat(Nanos.plusSeconds(1_000_000_000L, 9e16)).isEqualTo(Long.MAX_VALUE);
        assertThat(Nanos.plusSeconds(1_000_000_000L, Double.POSITIVE_INFINITY)).isEqualTo(Long.MAX_VALUE);
        assertThat(Nanos.plusSeconds(1_000, Double.NaN)).isEqualTo(1_000);
    }

    @Test
    void durationsLongerThanTheRangeAreForever() {
        assertThat(Nanos.of(Duration.ofSeconds(30))).isEqualTo(30_000_000_000L);
        assertThat(Nanos.of(Duration.ofHours(3_000_000))).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void aWholeAnswerOfManySamplesSaturates() {
        Ticket t = new Ticket("t", 1, 0, "x", Long.MAX_VALUE, Runnable::run, new AdmissionFixtures.Recorder());
        assertThat(t.wholeAnswer(Integer.MAX_VALUE, Integer.MAX_VALUE).answerTokens)
                .isEqualTo((long) Integer.MAX_VALUE * Integer.MAX_VALUE);
        assertThat(t.wholeAnswer(Long.MAX_VALUE / 2, 3).answerTokens).isEqualTo(Long.MAX_VALUE);
        assertThat(t.wholeAnswer(-4, 3).answerTokens).isZero();
    }
}
