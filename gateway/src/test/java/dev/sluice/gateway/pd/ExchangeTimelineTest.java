package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.HealthConfig;
import org.junit.jupiter.api.Test;

/** The deadlines one request's moments imply, on a clock the test holds. */
class ExchangeTimelineTest {
    private static final GatewayConfig CFG = ConfigLoader.parse("""
            workers:
              prefill: [{url: "http://127.0.0.1:1"}]
              decode: [{url: "http://127.0.0.1:2"}]
            """, "test");
    private static final HealthConfig.Watchdog WATCHDOG = CFG.health().watchdog();
    private static final long FIRST_TOKEN = CFG.timeouts().firstToken().toNanos();
    private static final long EXPECTED_PREFILL = 1_000_000;
    private static final long PREFILL_STALL = Math.max(WATCHDOG.prefillFloor().toNanos(),
            (long) (WATCHDOG.prefillFactor() * EXPECTED_PREFILL));

    private static ExchangeTimeline timeline(boolean stream) {
        return new ExchangeTimeline(0, CFG.timeouts(), WATCHDOG, stream);
    }

    /**
     * The review's bug: a non-streamed request's first-token moment is its prefill's end; retried
     * after that, the retry had no first-token deadline and no stall watchdog at all (only
     * timeouts.request was left). Failed before the timeline reset the attempt's first token.
     */
    @Test
    void aRetryAfterTheFirstAttemptsPrefillFinishedHasItsOwnFirstTokenDeadline() {
        ExchangeTimeline t = timeline(false);
        t.attemptStarted(10, EXPECTED_PREFILL, true);
        t.prefillDone(20);
        assertThat(t.firstToken(20)).isTrue();
        t.attemptEnded();
        long retry = 1_000_000_000L;
        t.attemptStarted(retry, EXPECTED_PREFILL, true);
        assertThat(t.pastFirstToken()).isFalse();
        assertThat(t.nextDeadline(false)).isEqualTo(retry + Math.min(PREFILL_STALL, FIRST_TOKEN));
        ExchangeTimeline.Expiry e = t.expired(retry + PREFILL_STALL, false);
        assertThat(e).isNotNull();
        assertThat(e.kind()).isEqualTo(ExchangeTimeline.Kind.PREFILL_STALL);
        assertThat(e.abortCause()).isEqualTo(AbortCause.STALL);
    }

    @Test
    void theRequestsTimeToFirstTokenIsItsFirstAttemptsWhicheverAttemptEnds() {
        ExchangeTimeline t = timeline(false);
        t.attemptStarted(10, EXPECTED_PREFILL, true);
        assertThat(t.ttftMillis()).isEqualTo(-1);
        assertThat(t.firstToken(5_000_000)).isTrue();
        t.attemptEnded();
        t.attemptStarted(9_000_000, EXPECTED_PREFILL, true);
        assertThat(t.firstToken(20_000_000)).isFalse(); // the retry's own first token: not the request's
        assertThat(t.pastFirstToken()).isTrue();
        assertThat(t.ttftMillis()).isEqualTo(5);
    }

    @Test
    void aStreamWaitsForItsDecodeOnlyAsLongAsTheWatchdogAllowsAfterThePrefill() {
        ExchangeTimeline t = timeline(true);
        t.attemptStarted(50, EXPECTED_PREFILL, true);
        t.prefillDone(100);
        long decodeStall = 100 + WATCHDOG.firstTokenAfterPrefill().toNanos();
        assertThat(t.nextDeadline(false)).isEqualTo(Math.min(decodeStall, 50 + FIRST_TOKEN));
        assertThat(t.expired(decodeStall - 1, false)).isNull();
        assertThat(t.expired(decodeStall, false).kind()).isEqualTo(ExchangeTimeline.Kind.DECODE_STALL);
    }

    /**
     * CI's failure: two streams on a rank that runs one; the one the gateway dispatched first (then the
     * only one watched) was the one whose KV landed last, so it waited in the decode and was retried as a
     * stall. Seen waiting for a slot at the watchdog's deadline, its wait starts again from then; a later
     * check that does not see it waiting fires.
     */
    @Test
    void aWatchedStreamSeenWaitingInAnOverfullDecodeHasItsWaitStartAgain() {
        ExchangeTimeline t = timeline(true);
        t.attemptStarted(50, EXPECTED_PREFILL, true);
        t.prefillDone(100);
        long wait = WATCHDOG.firstTokenAfterPrefill().toNanos();
        assertThat(t.expired(100 + wait, false).kind()).isEqualTo(ExchangeTimeline.Kind.DECODE_STALL);
        t.decodeMayWait(100 + wait);
        assertThat(t.expired(100 + wait, false)).isNull();
        assertThat(t.nextDeadline(false)).isEqualTo(Math.min(100 + 2 * wait, 50 + FIRST_TOKEN));
        assertThat(t.expired(100 + 2 * wait - 1, false)).isNull();
        assertThat(t.expired(100 + 2 * wait, false).kind()).isEqualTo(ExchangeTimeline.Kind.DECODE_STALL);
        // a retry is watched from its own prefill's end again
        t.attemptEnded();
        t.attemptStarted(1_000_000, EXPECTED_PREFILL, true);
        t.prefillDone(1_000_010);
        assertThat(t.expired(1_000_010 + wait, false).kind()).isEqualTo(ExchangeTimeline.Kind.DECODE_STALL);
    }

    @Test
    void aStartedStreamIsIdleAfterIdleStreamWithoutAChunkAndNeverOnceTheClientEnded() {
        ExchangeTimeline t = timeline(true);
        t.attemptStarted(50, EXPECTED_PREFILL, true);
        t.firstToken(1_000);
        assertThat(t.chunkRelayed(3_000)).isEqualTo(2_000);
        long idle = 3_000 + CFG.timeouts().idleStream().toNanos();
        assertThat(t.nextDeadline(false)).isEqualTo(idle);
        assertThat(t.expired(idle, false).kind()).isEqualTo(ExchangeTimeline.Kind.IDLE_STREAM);
        assertThat(t.expired(idle, true)).isNull();
        t.clientResumed(idle); // backpressure ended: the clock restarts
        assertThat(t.expired(idle, false)).isNull();
    }

    @Test
    void aWholeAnswerFromAUnifiedWorkerIsNotWatchedForItsPrefill() {
        ExchangeTimeline t = timeline(false);
        t.attemptStarted(50, EXPECTED_PREFILL, false);
        assertThat(t.nextDeadline(false)).isEqualTo(50 + FIRST_TOKEN);
    }

    @Test
    void theRequestDeadlineHoldsAcrossAttempts() {
        ExchangeTimeline t = timeline(true);
        long request = CFG.timeouts().request().toNanos();
        t.attemptStarted(request - 5, EXPECTED_PREFILL, true);
        assertThat(t.expired(request, false).kind()).isEqualTo(ExchangeTimeline.Kind.REQUEST);
        t.attemptEnded();
        assertThat(t.nextDeadline(false)).isEqualTo(request);
    }
}
