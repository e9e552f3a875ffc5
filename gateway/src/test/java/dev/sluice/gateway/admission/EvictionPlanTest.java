package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EvictionPlanTest {
    private long clock;

    private Ticket ticket(String id, long tokens, int priority, String tenant) {
        Ticket t = new Ticket(id, tokens, priority, tenant, Long.MAX_VALUE, Runnable::run, new Recorder());
        t.enqueuedNanos = ++clock; // distinct arrival times: "newest" is well defined
        return t;
    }

    private static AdmissionConfig withDefaultShares(AdmissionConfig base) {
        return new AdmissionConfig(base.maxQueuedRequests(), base.maxPendingTokens(), base.queueTimeout(),
                base.maxRequestTokens(), base.prefillMaxInflightRequests(), base.prefillMaxInflightTokens(),
                base.decodeMaxInflightStreams(), base.initialPrefillTokensPerSecond(), base.retryAfterMin(),
                base.retryAfterMax(), base.drainGrace(), base.priorities(), base.defaultPriority(), Map.of(), false,
                TenantLimits.DEFAULTS, base.tokenizer(), base.scheduling(), base.prefillRate(),
                base.prefillMaxInflightTime());
    }

    private PriorityQueues queue(Ticket... tickets) {
        PriorityQueues q = new PriorityQueues(3, Duration.ofSeconds(30).toNanos(), false);
        for (Ticket t : tickets) {
            q.add(t);
        }
        return q;
    }

    @Test
    void withRoomNobodyGivesWay() {
        AdmissionConfig cfg = config(4, 10_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10);
        PriorityQueues q = queue(ticket("a", 100, 2, "a"));
        EvictionPlan plan = EvictionPlan.plan(ticket("new", 100, 0, "b"), q, 100, cfg);
        assertThat(plan.victims).isEmpty();
        assertThat(plan.queueStaysFull(q, cfg)).isFalse();
    }

    @Test
    void aFullQueueMakesRoomFromTheLowestClassOnlyForAHigherOne() {
        AdmissionConfig cfg = config(2, 10_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10);
        Ticket normal = ticket("normal", 100, 1, "a");
        Ticket low = ticket("low", 300, 2, "a");
        PriorityQueues q = queue(normal, low);

        EvictionPlan forHigh = EvictionPlan.plan(ticket("high", 100, 0, "a"), q, 400, cfg);
        assertThat(forHigh.victims).containsExactly(low);
        assertThat(forHigh.byPriority).isEqualTo(1);
        assertThat(forHigh.freedTokens).isEqualTo(300);
        assertThat(forHigh.queueStaysFull(q, cfg)).isFalse();
        assertThat(q.size()).isEqualTo(2); // a plan only

        EvictionPlan forLow = EvictionPlan.plan(ticket("low2", 300, 2, "a"), q, 400, cfg);
        assertThat(forLow.victims).as("as long as the queued one of its class: nobody gives way").isEmpty();
        assertThat(forLow.queueStaysFull(q, cfg)).isTrue();
    }

    @Test
    void aShortTokenBudgetEvictsUntilTheNewcomerFits() {
        AdmissionConfig cfg = config(10, 1_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10);
        Ticket l1 = ticket("l1", 300, 2, "a");
        Ticket l2 = ticket("l2", 300, 2, "a");
        PriorityQueues q = queue(l1, l2);
        Ticket high = ticket("high", 500, 0, "a");
        EvictionPlan plan = EvictionPlan.plan(high, q, 900, cfg); // 900 + 500 > 1000: 400 short
        assertThat(plan.victims).containsExactly(l2, l1); // newest first: one (300) is not enough
        assertThat(plan.overBudget(high, 900, cfg)).isFalse();
        Ticket big = ticket("big", 1_000, 0, "a");
        assertThat(EvictionPlan.plan(big, q, 900, cfg).overBudget(big, 900, cfg))
                .as("everything evictable is not enough").isTrue();
    }

    @Test
    void aTenantOverItsShareGivesWayToOneUnderItsShare() {
        AdmissionConfig cfg = withDefaultShares(config(4, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Ticket a1 = ticket("a1", 100, 1, "a");
        Ticket a2 = ticket("a2", 100, 1, "a");
        Ticket a3 = ticket("a3", 100, 1, "a");
        Ticket b1 = ticket("b1", 100, 1, "b");
        PriorityQueues q = queue(a1, a2, a3, b1);

        EvictionPlan plan = EvictionPlan.plan(ticket("b2", 100, 1, "b"), q, 400, cfg);
        assertThat(plan.victims).containsExactly(a3); // a holds 3 of 4, over its half: its newest goes
        assertThat(plan.byPriority).isZero();

        assertThat(EvictionPlan.plan(ticket("a4", 100, 1, "a"), q, 400, cfg).victims)
                .as("a tenant over its share waits its turn").isEmpty();
    }

    @Test
    void theTicketsAreReadOnlyWhenSomeoneIsOverItsShare() {
        AdmissionConfig cfg = withDefaultShares(config(4, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Ticket newcomer = ticket("c1", 100, 1, "c");
        Map<String, long[]> even = new HashMap<>(Map.of("a", new long[] {2, 200}, "b", new long[] {2, 200}));
        List<Ticket> none = TenantShares.victims(newcomer, even, () -> {
            throw new AssertionError("the queue was walked with nobody over its share");
        }, cfg, 1, 0);
        assertThat(none).isEmpty();

        Ticket a1 = ticket("a1", 100, 1, "a");
        Ticket b1 = ticket("b1", 100, 1, "b");
        Ticket a3 = ticket("a3", 100, 1, "a");
        Map<String, long[]> skewed = new HashMap<>(Map.of("a", new long[] {3, 300}, "b", new long[] {1, 100}));
        List<Ticket> queued = List.of(a1, b1, a3);
        assertThat(TenantShares.victims(newcomer, skewed, () -> queued, cfg, 1, 0)).containsExactly(a3);
    }

    private static AdmissionConfig withShed(AdmissionConfig base, AdmissionConfig.Shed shed) {
        return new AdmissionConfig(base.maxQueuedRequests(), base.maxPendingTokens(), base.queueTimeout(),
                base.maxRequestTokens(), base.prefillMaxInflightRequests(), base.prefillMaxInflightTokens(),
                base.decodeMaxInflightStreams(), base.initialPrefillTokensPerSecond(), base.retryAfterMin(),
                base.retryAfterMax(), base.drainGrace(), base.priorities(), base.defaultPriority(), base.apiKeys(),
                base.requireApiKey(), base.tenantLimits(), base.tokenizer(),
                new AdmissionConfig.SchedulingConfig(base.scheduling().order(), base.scheduling().reviewInterval(),
                        shed), base.prefillRate(), base.prefillMaxInflightTime());
    }

    @Test
    void aFullQueueSwapsItsLongestPromptOfTheClassForAShorterNewcomerOneForOne() {
        AdmissionConfig cfg = config(3, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10);
        Ticket mid = ticket("mid", 4_000, 1, "a");
        Ticket longest = ticket("longest", 16_000, 1, "a");
        Ticket shortOne = ticket("short", 1_000, 1, "a");
        PriorityQueues q = queue(mid, longest, shortOne);

        Ticket newcomer = ticket("new", 2_000, 1, "a");
        EvictionPlan plan = EvictionPlan.plan(newcomer, q, 21_000, cfg);
        assertThat(plan.victims).containsExactly(longest);
        assertThat(plan.byPriority).isZero();
        assertThat(plan.byLength).isEqualTo(1);
        assertThat(plan.queueStaysFull(q, cfg)).isFalse();

        Ticket nearlyAsLong = ticket("nearly", 9_000, 1, "a");
        assertThat(EvictionPlan.plan(nearlyAsLong, q, 21_000, cfg).victims)
                .as("16,000 is less than twice 9,000: first come keeps its place").isEmpty();
        Ticket longer = ticket("longer", 20_000, 1, "a");
        assertThat(EvictionPlan.plan(longer, q, 21_000, cfg).victims)
                .as("a newcomer longer than everything queued of its class takes nobody's place").isEmpty();
        EvictionPlan forOtherTenant = EvictionPlan.plan(ticket("b", 2_000, 1, "b"), q, 21_000, cfg);
        assertThat(forOtherTenant.byLength).as("another tenant's prompts are the tenant shares' business").isZero();
        assertThat(forOtherTenant.victims).as("a holds all of the queue, over its share: its newest goes")
                .containsExactly(shortOne);
        EvictionPlan forHigher = EvictionPlan.plan(ticket("hi", 2_000, 0, "a"), q, 21_000, cfg);
        assertThat(forHigher.victims).as("for a higher class the longest goes by priority").containsExactly(longest);
        assertThat(forHigher.byPriority).isEqualTo(1);
        assertThat(forHigher.byLength).isZero();
    }

    @Test
    void aShortTokenBudgetTakesOneLongerPromptOfTheClassOnlyWhenThatOneMakesRoom() {
        AdmissionConfig cfg = config(10, 20_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10);
        Ticket a = ticket("a", 6_000, 1, "a");
        Ticket b = ticket("b", 12_000, 1, "a");
        PriorityQueues q = queue(a, b);
        Ticket newcomer = ticket("new", 5_000, 1, "a");
        EvictionPlan plan = EvictionPlan.plan(newcomer, q, 18_000, cfg); // 3,000 short
        assertThat(plan.victims).containsExactly(b);
        assertThat(plan.overBudget(newcomer, 18_000, cfg)).isFalse();

        Ticket longerThanAll = ticket("longer", 13_000, 1, "a");
        assertThat(EvictionPlan.plan(longerThanAll, q, 18_000, cfg).overBudget(longerThanAll, 18_000, cfg))
                .as("no longer prompt of its class to take the place of").isTrue();
        // the budget already overrun (a lowered limit): one longer prompt is not room enough, so nobody goes
        EvictionPlan overrun = EvictionPlan.plan(newcomer, q, 40_000, cfg);
        assertThat(overrun.victims).isEmpty();
        assertThat(overrun.overBudget(newcomer, 40_000, cfg)).isTrue();
    }

    @Test
    void shedLatestKeepsTheQueuedWhateverTheirLength() {
        AdmissionConfig cfg = withShed(config(2, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10),
                AdmissionConfig.Shed.LATEST);
        Ticket longest = ticket("longest", 16_000, 1, "a");
        Ticket low = ticket("low", 8_000, 2, "a");
        PriorityQueues q = queue(longest, low);
        assertThat(EvictionPlan.plan(ticket("new", 1_000, 1, "a"), q, 24_000, cfg).victims)
                .as("a lower class still gives way, the newest of the busiest tenant").containsExactly(low);
        PriorityQueues sameClass = queue(ticket("x", 16_000, 1, "a"), ticket("y", 9_000, 1, "a"));
        EvictionPlan plan = EvictionPlan.plan(ticket("new2", 1_000, 1, "a"), sameClass, 25_000, cfg);
        assertThat(plan.victims).isEmpty();
        assertThat(plan.queueStaysFull(sameClass, cfg)).isTrue();
    }

    @Test
    void underShedLongestALowerClassGivesWayLongestFirst() {
        AdmissionConfig cfg = config(10, 10_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10);
        Ticket small = ticket("small", 1_000, 2, "a");
        Ticket big = ticket("big", 5_000, 2, "a");
        Ticket newest = ticket("newest", 2_000, 2, "a");
        PriorityQueues q = queue(small, big, newest);
        Ticket high = ticket("high", 4_000, 0, "a");
        EvictionPlan plan = EvictionPlan.plan(high, q, 8_000, cfg); // 2,000 short
        assertThat(plan.victims).as("one long one instead of the newest two").containsExactly(big);
        assertThat(plan.byPriority).isEqualTo(1);
    }
}
