package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class PrefillThroughputTest {
    private static final long MS = 1_000_000L;

    @Test
    void measuresTokensPerBusySecondIgnoringIdleTime() {
        PrefillThroughput t = new PrefillThroughput(8000, 10);
        t.busy(true, 0);
        t.completed(5000, 2000 * MS);
        t.busy(false, 2000 * MS);
        t.busy(true, 60_000 * MS); // a minute idle in between counts for nothing
        t.completed(5000, 62_000 * MS);
        t.busy(false, 62_000 * MS);

        assertThat(t.measured()).isTrue();
        assertThat(t.tokensPerSecond()).isCloseTo(2500, within(1.0));
    }

    @Test
    void shortPromptsMeasureOverheadNotComputeAndAreLeftOut() {
        PrefillThroughput t = new PrefillThroughput(8000, 10);
        long now = 0;
        for (int i = 0; i < 1000; i++) { // 1,000 ten-token requests, 50 ms each
            t.busy(true, now);
            now += 50 * MS;
            t.completed(10, now);
            t.busy(false, now);
            now += 10 * MS;
        }
        assertThat(t.measured()).as("200 tokens/s of overhead is not a prefill rate").isFalse();
        assertThat(t.tokensPerSecond()).isEqualTo(8000);
    }

    @Test
    void followsAChangeInRateOverTheHorizon() {
        PrefillThroughput t = new PrefillThroughput(8000, 10);
        long now = 0;
        t.busy(true, now);
        for (int i = 0; i < 100; i++) { // 4,000 tokens/s for 25 s
            now += 250 * MS;
            t.completed(1000, now);
        }
        assertThat(t.tokensPerSecond()).isCloseTo(4000, within(50.0));
        for (int i = 0; i < 200; i++) { // then 2,000 tokens/s for 50 s
            now += 500 * MS;
            t.completed(1000, now);
        }
        assertThat(t.tokensPerSecond()).isCloseTo(2000, within(100.0));
    }

    @Test
    void theFirstIntervalOfABusyPeriodHoldsOverheadAndIsLeftOutWhenMoreFollows() {
        PrefillThroughput t = new PrefillThroughput(8000, 10);
        t.busy(true, 0);
        t.completed(11_000, 5_100 * MS, true); // 4.4 s of prefill + 0.7 s of handoff and first step
        assertThat(t.measured()).isFalse();
        t.completed(11_000, 9_500 * MS, true); // the next one: its prefill alone
        assertThat(t.measured()).isTrue();
        assertThat(t.tokensPerSecond()).isCloseTo(2500, within(1.0));
    }

    @Test
    void theFirstCompletionEverCarriesTheColdStartAndIsNoSampleEvenAlone() {
        PrefillThroughput t = new PrefillThroughput(8000, 10);
        t.busy(true, 0);
        t.completed(11_000, 7_100 * MS); // 4.4 s of prefill + 2.7 s of a cold start, the worker idle after
        t.busy(false, 7_100 * MS);
        assertThat(t.measured()).isFalse();
        t.busy(true, 8_000 * MS);
        t.completed(11_000, 12_450 * MS); // warm: 4.4 s + 50 ms
        t.busy(false, 12_450 * MS);
        assertThat(t.measured()).isTrue();
        assertThat(t.tokensPerSecond()).isCloseTo(2472, within(1.0));
    }

    @Test
    void aPriorIsWeighedAgainstNotReplacedByTheFirstSamples() {
        PrefillThroughput t = new PrefillThroughput(8000, 10);
        t.seed(2500);
        assertThat(t.measured()).isFalse();
        assertThat(t.tokensPerSecond()).isEqualTo(2500);
        t.busy(true, 0);
        t.completed(10_000, 5_000 * MS); // the first completion: its cold start is no sample
        t.busy(false, 5_000 * MS);
        assertThat(t.measured()).isFalse();
        t.busy(true, 6_000 * MS);
        t.completed(10_000, 11_000 * MS); // 2,000 tokens/s over 5 s: half the horizon
        t.busy(false, 11_000 * MS);
        assertThat(t.measured()).isTrue();
        assertThat(t.tokensPerSecond()).isCloseTo(2250, within(1.0));
    }
}
