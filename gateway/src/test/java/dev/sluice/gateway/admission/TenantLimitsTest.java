package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimit;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Work-conserving tenant shares of the queue and the token budget, and per-tenant token rates. */
class TenantLimitsTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private AdmissionController controller(AdmissionConfig base, TenantLimits limits) {
        AdmissionConfig cfg = new AdmissionConfig(base.maxQueuedRequests(), base.maxPendingTokens(), base.queueTimeout(),
                base.maxRequestTokens(), base.prefillMaxInflightRequests(), base.prefillMaxInflightTokens(),
                base.decodeMaxInflightStreams(), base.initialPrefillTokensPerSecond(), base.retryAfterMin(),
                base.retryAfterMax(), base.drainGrace(), base.priorities(), base.defaultPriority(), Map.of(), false,
                limits, base.tokenizer(), base.scheduling(), base.prefillRate(), base.prefillMaxInflightTime());
        return new AdmissionController(cfg, workers(1, 1), AdmissionObserver.NONE, now::get);
    }

    private Ticket ticket(String id, long tokens, String tenant, Recorder r) {
        now.addAndGet(1000); // distinct arrival times: "newest" is well defined
        return new Ticket(id, tokens, 1, tenant, Long.MAX_VALUE, Runnable::run, r);
    }

    @Test
    void aBurstFillsIdleQueueThenGivesWayToATenantUnderItsShare() {
        // queue of 4, each tenant keeps half when the other needs room; the one prefill slot is busy
        AdmissionController c = controller(config(4, 1_000_000, Duration.ofSeconds(30), 50_000, 1, 1_000_000, 10),
                TenantLimits.DEFAULTS);
        c.submit(ticket("running", 100, "a", new Recorder()));
        List<Recorder> burst = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Recorder r = new Recorder();
            burst.add(r);
            assertThat(c.submit(ticket("a" + i, 100, "a", r))).as("idle capacity is anyone's").isNull();
        }
        assertThat(c.snapshot().queued()).isEqualTo(4);

        // tenant b arrives at a full queue: a's newest waiting request gives way
        Recorder b0 = new Recorder();
        assertThat(c.submit(ticket("b0", 100, "b", b0))).isNull();
        assertThat(burst.get(3).rejection.reason()).isEqualTo(RejectReason.TENANT_SHARE);
        assertThat(burst.subList(0, 3)).allSatisfy(r -> assertThat(r.rejection).isNull());
        Recorder b1 = new Recorder();
        assertThat(c.submit(ticket("b1", 100, "b", b1))).isNull();
        assertThat(burst.get(2).rejection.reason()).isEqualTo(RejectReason.TENANT_SHARE);

        // now 2 + 2: both at their share; a third from b waits its turn like everyone (queue full)
        Rejection full = c.submit(ticket("b2", 100, "b", new Recorder()));
        assertThat(full.reason()).isEqualTo(RejectReason.QUEUE_FULL);
        // and a over its share arriving again is refused, not b's requests evicted
        assertThat(c.submit(ticket("a9", 100, "a", new Recorder())).reason()).isEqualTo(RejectReason.QUEUE_FULL);
        assertThat(b0.rejection).isNull();
        assertThat(b1.rejection).isNull();
    }

    @Test
    void theTokenBudgetIsSharedTheSameWay() {
        // budget 1000 tokens, one prefill slot busy with 100; tenant a queues 800, tenant b asks for 300
        AdmissionController c = controller(config(100, 1000, Duration.ofSeconds(30), 1000, 1, 1_000_000, 10),
                TenantLimits.DEFAULTS);
        c.submit(ticket("running", 100, "x", new Recorder()));
        Recorder a1 = new Recorder();
        Recorder a2 = new Recorder();
        c.submit(ticket("a1", 400, "a", a1));
        c.submit(ticket("a2", 400, "a", a2));
        Recorder b = new Recorder();
        assertThat(c.submit(ticket("b", 300, "b", b))).isNull();
        assertThat(a2.rejection.reason()).isEqualTo(RejectReason.TENANT_SHARE);
        assertThat(a1.rejection).isNull();
        assertThat(c.snapshot().pendingTokens()).isEqualTo(800);
    }

    @Test
    void aFullShareOfOneMeansNothingIsKeptForOthers() {
        TenantLimits greedy = new TenantLimits(new TenantLimit(1.0, 1.0, 0), Map.of());
        AdmissionController c = controller(config(2, 1_000_000, Duration.ofSeconds(30), 50_000, 1, 1_000_000, 10), greedy);
        c.submit(ticket("running", 100, "a", new Recorder()));
        c.submit(ticket("a0", 100, "a", new Recorder()));
        c.submit(ticket("a1", 100, "a", new Recorder()));
        assertThat(c.submit(ticket("b0", 100, "b", new Recorder())).reason()).isEqualTo(RejectReason.QUEUE_FULL);
    }

    @Test
    void aTenantsTokenRateIsChargedPromptAtDispatchAndCompletionAtTheEnd() {
        // 600 tokens a minute = 10 a second; other tenants unlimited
        TenantLimits limits = new TenantLimits(new TenantLimit(0.5, 0.5, 0),
                Map.of("metered", new TenantLimit(0.5, 0.5, 600)));
        AdmissionController c = controller(config(10, 1_000_000, Duration.ofSeconds(30), 50_000, 10, 1_000_000, 10),
                limits);
        assertThat(c.tokensRemaining("metered")).isEqualTo(600);
        Ticket first = ticket("m1", 500, "metered", new Recorder());
        assertThat(c.submit(first)).isNull();
        assertThat(c.tokensRemaining("metered")).isEqualTo(100);
        c.completionTokens("metered", 150); // the answer: now 50 in debt
        Rejection r = c.submit(ticket("m2", 10, "metered", new Recorder()));
        assertThat(r.reason()).isEqualTo(RejectReason.TENANT_RATE_LIMITED);
        assertThat(r.retryAfterSeconds()).isEqualTo(5); // 50 tokens at 10/s
        assertThat(c.submit(ticket("other", 10_000, "free", new Recorder()))).as("other tenants unaffected").isNull();

        now.addAndGet(Duration.ofSeconds(5).toNanos() + 1_000_000);
        assertThat(c.submit(ticket("m3", 10, "metered", new Recorder()))).isNull();
    }

    @Test
    void onASmallLeaseOfTheQueueATenantWithNothingWaitingStillDisplacesOneOverItsShare() {
        // the fleet's queue is 32, this replica leases 2 of it (coordination): a share of 0.4 is 0.8 of a request
        TenantLimits limits = new TenantLimits(new TenantLimit(0.4, 0.4, 0), Map.of());
        AdmissionController c = controller(config(32, 1_000_000, Duration.ofSeconds(30), 50_000, 1, 1_000_000, 10),
                limits);
        c.applyShares(new FleetShares(2, 1_000_000, Map.of(), Map.of(), Map.of(), 1));
        c.submit(ticket("running", 100, "x", new Recorder()));
        Recorder a0 = new Recorder();
        Recorder a1 = new Recorder();
        assertThat(c.submit(ticket("a0", 100, "a", a0))).isNull();
        assertThat(c.submit(ticket("a1", 100, "a", a1))).isNull();
        Recorder b0 = new Recorder();
        assertThat(c.submit(ticket("b0", 100, "b", b0))).as("b has nothing here: under any share").isNull();
        assertThat(a1.rejection.reason()).isEqualTo(RejectReason.TENANT_SHARE);
        // a, with one request left, is not over its share, and b with its one is not either: no evicting in turn
        assertThat(c.submit(ticket("a2", 100, "a", new Recorder())).reason()).isEqualTo(RejectReason.QUEUE_FULL);
        assertThat(c.submit(ticket("b1", 100, "b", new Recorder())).reason()).isEqualTo(RejectReason.QUEUE_FULL);
        assertThat(a0.rejection).isNull();
        assertThat(b0.rejection).isNull();
    }

    @Test
    void withCoordinationATenantsRateHereIsItsLease() {
        TenantLimits limits = new TenantLimits(new TenantLimit(0.5, 0.5, 0),
                Map.of("metered", new TenantLimit(0.5, 0.5, 6_000), "other", new TenantLimit(0.5, 0.5, 900)));
        AdmissionController c = controller(config(10, 1_000_000, Duration.ofSeconds(30), 50_000, 10, 1_000_000, 10),
                limits);
        c.applyShares(new FleetShares(10, 1_000_000, Map.of(), Map.of(), Map.of(), Map.of("metered", 1_500L), 3));
        assertThat(c.tokensRemaining("metered")).isEqualTo(1_500);
        assertThat(c.tokensRemaining("other")).as("not leased here: its rate / 3").isEqualTo(300);
        assertThat(c.submit(ticket("m1", 1_600, "metered", new Recorder()))).isNull();
        Rejection r = c.submit(ticket("m2", 10, "metered", new Recorder()));
        assertThat(r.reason()).isEqualTo(RejectReason.TENANT_RATE_LIMITED);
        assertThat(r.retryAfterSeconds()).as("100 tokens of debt at 25/s").isEqualTo(4);
        assertThat(c.tenantDemand(64)).extracting(TenantDemand::tenant).containsExactly("metered");
    }
}
