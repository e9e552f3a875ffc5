package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.config.RetryConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.upstream.UpstreamFailure;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** When a failed attempt is retried, after how long, and which workers the next pair avoids. */
class RetryPlanTest {
    private static final long MS = 1_000_000;
    private static final RetryConfig CFG = new RetryConfig(4, Duration.ofMillis(50), Duration.ofMillis(300), 0.2);
    private static final long FAR = Long.MAX_VALUE / 2;
    private final Worker prefill = AttemptHarness.worker(WorkerRole.PREFILL, AttemptHarness.NOWHERE, 8998);
    private final Worker decode = AttemptHarness.worker(WorkerRole.DECODE, 2, null);

    @Test
    void backoffDoublesUpToItsCap() {
        assertThat(RetryPlan.backoffNanos(CFG, 0, 0, FAR, 0)).isEqualTo(50 * MS);
        assertThat(RetryPlan.backoffNanos(CFG, 1, 0, FAR, 0)).isEqualTo(100 * MS);
        assertThat(RetryPlan.backoffNanos(CFG, 2, 0, FAR, 0)).isEqualTo(200 * MS);
        assertThat(RetryPlan.backoffNanos(CFG, 3, 0, FAR, 0)).as("capped at backoff_max").isEqualTo(300 * MS);
    }

    @Test
    void jitterTakesUpToItsShareOffTheWait() {
        // u in [0, 1): the wait is drawn from [(1 - jitter) x backoff, backoff]
        assertThat(RetryPlan.backoffNanos(CFG, 1, 0, FAR, 0.5)).isEqualTo(90 * MS);
        assertThat(RetryPlan.backoffNanos(CFG, 1, 0, FAR, 0.999_999)).isBetween(80 * MS, 80 * MS + 1000);
        for (int i = 0; i < 100; i++) {
            assertThat(RetryPlan.backoffNanos(CFG, 2, 0, FAR)).isBetween(160 * MS, 200 * MS);
        }
    }

    @Test
    void noRetryPastTheMaximum() {
        assertThat(RetryPlan.backoffNanos(CFG, 3, 0, FAR, 0)).isPositive();
        assertThat(RetryPlan.backoffNanos(CFG, 4, 0, FAR, 0)).isEqualTo(-1);
        assertThat(RetryPlan.backoffNanos(new RetryConfig(0, Duration.ofMillis(50), Duration.ofMillis(300), 0.2), 0,
                0, FAR, 0)).isEqualTo(-1);
    }

    @Test
    void noRetryWhoseWaitWouldNotEndBeforeTheDeadline() {
        long now = 1_000 * MS;
        assertThat(RetryPlan.backoffNanos(CFG, 0, now, now + 50 * MS + 1, 0)).isEqualTo(50 * MS);
        assertThat(RetryPlan.backoffNanos(CFG, 0, now, now + 50 * MS, 0)).isEqualTo(-1);
        assertThat(RetryPlan.backoffNanos(CFG, 0, now, now + 10 * MS, 0)).isEqualTo(-1);
    }

    private static ApiError err() {
        return ApiError.internal("test");
    }

    @Test
    void theNextPairAvoidsTheCulpritOnly() {
        AttemptFailure f = AttemptFailure.fromStatus(ApiError.fromWorker(500, "decode", decode.name(), ""), decode,
                500, "");
        assertThat(RetryPlan.avoid(f, prefill, decode)).containsExactly(decode);
    }

    @Test
    void afterAStallWithNoCulpritTheNextPairAvoidsBoth() {
        assertThat(RetryPlan.avoid(AttemptFailure.stall(err(), null), prefill, decode))
                .containsExactlyInAnyOrder(prefill, decode);
        assertThat(RetryPlan.avoid(AttemptFailure.stall(err(), prefill), prefill, decode)).containsExactly(prefill);
    }

    @Test
    void withoutACulpritOrAStallNothingIsAvoided() {
        assertThat(RetryPlan.avoid(AttemptFailure.ejected(decode), prefill, decode)).isEmpty();
        AttemptFailure stale = AttemptFailure.fromConnection(err(), decode,
                new UpstreamFailure(UpstreamFailure.Kind.RESET, "closed", true));
        assertThat(RetryPlan.avoid(stale, prefill, decode)).isEmpty();
    }
}
