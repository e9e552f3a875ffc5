package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.AdmissionConfig.TenantLimit;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A tenant's token bucket on its own, and with this replica's lease of the tenant's rate (coordination). */
class TenantRatesTest {
    private static final long SECOND = 1_000_000_000L;
    private static final TenantLimits LIMITS = new TenantLimits(new TenantLimit(0.5, 0.5, 0),
            Map.of("acme", new TenantLimit(0.5, 0.5, 6_000), "beta", new TenantLimit(0.5, 0.5, 600)));

    private static FleetShares leased(Map<String, Long> tenants, int divisor) {
        return new FleetShares(32, 65_536, Map.of(), Map.of(), Map.of(), tenants, divisor);
    }

    @Test
    void withoutCoordinationTheConfiguredRateIsTheBucketAndNothingIsTrackedForLeases() {
        TenantRates r = new TenantRates(LIMITS);
        long now = SECOND;
        assertThat(r.limit("acme")).isEqualTo(6_000);
        assertThat(r.limit("nobody")).isEqualTo(TenantRates.NO_LIMIT);
        assertThat(r.waitNanos("nobody", now)).isZero();
        r.charge("acme", 6_100, now);
        assertThat(r.waitNanos("acme", now)).as("100 tokens of debt at 100 tokens/s").isEqualTo(SECOND);
        r.refused("acme", 50, now);
        assertThat(r.demand(now + SECOND, 64)).as("no leases, no activity kept").isEmpty();
    }

    @Test
    void theGrantIsBothTheBucketsSizeAndItsRefillRate() {
        TenantRates r = new TenantRates(LIMITS);
        r.shares(leased(Map.of("acme", 1_200L), 3));
        long now = SECOND;
        assertThat(r.limit("acme")).isEqualTo(1_200);
        assertThat(r.remaining("acme", now)).as("a new bucket holds the grant, not the configured rate")
                .isEqualTo(1_200);
        r.charge("acme", 1_220, now);
        assertThat(r.waitNanos("acme", now)).as("20 tokens of debt at 20 tokens/s").isEqualTo(SECOND);
        assertThat(r.waitNanos("acme", now + SECOND)).isZero();
        assertThat(r.remaining("acme", now + 120 * SECOND)).as("refilled up to the grant only").isEqualTo(1_200);
    }

    @Test
    void aTenantWithoutALeaseHereRunsOnItsRateOverNAndNothingBeforeTheFirstGrant() {
        TenantRates r = new TenantRates(LIMITS);
        r.shares(leased(Map.of("acme", 1_200L), 3));
        assertThat(r.limit("beta")).as("not leased here: rate / N").isEqualTo(200);
        r.shares(leased(Map.of(), Integer.MAX_VALUE)); // joining: nothing is held before the first grant
        assertThat(r.limit("acme")).isZero();
        assertThat(r.waitNanos("acme", SECOND)).as("no share here: come back after about a renewal")
                .isEqualTo(SECOND);
        r.shares(null);
        assertThat(r.limit("acme")).as("coordination off: the configured rate whole").isEqualTo(6_000);
    }

    @Test
    void aShrunkGrantClampsTheSavedTokensAndAGrownOneAddsNone() {
        TenantRates r = new TenantRates(LIMITS);
        long now = SECOND;
        r.shares(leased(Map.of("acme", 6_000L), 1));
        r.charge("acme", 100, now);
        assertThat(r.remaining("acme", now)).isEqualTo(5_900);
        r.shares(leased(Map.of("acme", 600L), 2));
        assertThat(r.remaining("acme", now)).as("what a larger share saved is not kept").isEqualTo(600);
        r.charge("acme", 600, now);
        r.shares(leased(Map.of("acme", 6_000L), 1));
        assertThat(r.remaining("acme", now)).as("a larger share refills faster, it gives nothing at once").isZero();
        assertThat(r.remaining("acme", now + SECOND)).isEqualTo(100);
    }

    @Test
    void demandIsPerMinuteSinceTheLastReportTheBusiestFirstBoundedAndIdleTenantsAreDropped() {
        TenantRates r = new TenantRates(LIMITS);
        r.shares(leased(Map.of(), 2));
        long now = SECOND;
        assertThat(r.demand(now, 64)).isEmpty();
        r.charge("acme", 500, now);
        r.refused("acme", 250, now);
        r.charge("beta", 10, now);
        r.charge("nobody", 1_000, now); // no rate: never leased
        r.refused("nobody", 1_000, now);
        List<TenantDemand> d = r.demand(now + 10 * SECOND, 64);
        assertThat(d).containsExactly(new TenantDemand("acme", 6_000, 3_000, 3_000, 1_500),
                new TenantDemand("beta", 600, 300, 60, 0));
        assertThat(r.demand(now + 10 * SECOND, 1)).as("bounded: the busiest").extracting(TenantDemand::tenant)
                .containsExactly("acme");
        // nothing more: both decay (smoothed over about 5 s)
        List<TenantDemand> later = r.demand(now + 15 * SECOND, 64);
        assertThat(later.get(0).consumed()).isBetween(1_000L, 1_200L);
        assertThat(later.get(0).refused()).isBetween(500L, 600L);
        assertThat(r.demand(now + 10 * SECOND + TenantRates.IDLE_NANOS + 1, 64)).as("idle: its lease is dropped")
                .isEmpty();
    }

    @Test
    void bucketsAtTheirLimitAndIdleActivityAreForgotten() {
        TenantRates r = new TenantRates(LIMITS);
        r.shares(leased(Map.of("acme", 600L), 10));
        r.charge("acme", 600, SECOND);
        r.prune(SECOND);
        assertThat(r.tracked()).isEqualTo(1);
        r.prune(SECOND + 60 * SECOND);
        assertThat(r.tracked()).isZero();
        r.prune(SECOND + TenantRates.IDLE_NANOS + 60 * SECOND);
        assertThat(r.demand(SECOND + TenantRates.IDLE_NANOS + 60 * SECOND, 64)).isEmpty();
    }
}
