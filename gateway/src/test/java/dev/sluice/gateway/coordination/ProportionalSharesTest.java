package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.coordination.ProportionalShares.Demand;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The share computation: proportional to demand, work-conserving, whole units that add up to the capacity. */
class ProportionalSharesTest {
    @Test
    void demandThatFitsGetsItsDemandPlusAnEvenPartOfTheSpare() {
        Map<String, Long> t = ProportionalShares.targets(32, List.of(new Demand("a", 10), new Demand("b", 1),
                new Demand("c", 0)));
        // spare 21 split 7 each
        assertThat(t).containsEntry("a", 17L).containsEntry("b", 8L).containsEntry("c", 7L);
    }

    @Test
    void anIdleFleetSplitsEvenlyAndTheLeftoverUnitsGoByKey() {
        Map<String, Long> t = ProportionalShares.targets(8, List.of(new Demand("a", 1), new Demand("b", 1),
                new Demand("c", 1)));
        assertThat(t.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(8);
        assertThat(t).containsEntry("a", 3L).containsEntry("b", 3L).containsEntry("c", 2L);
    }

    @Test
    void overDemandIsSharedInProportion() {
        Map<String, Long> t = ProportionalShares.targets(10, List.of(new Demand("a", 30), new Demand("b", 10),
                new Demand("c", 10)));
        assertThat(t).containsEntry("a", 6L).containsEntry("b", 2L).containsEntry("c", 2L);
        Map<String, Long> odd = ProportionalShares.targets(4, List.of(new Demand("a", 20), new Demand("b", 1),
                new Demand("c", 1)));
        assertThat(odd).containsEntry("a", 4L).containsEntry("b", 0L).containsEntry("c", 0L);
    }

    @Test
    void theGrantNeverTakesWhatTheOthersHold() {
        assertThat(ProportionalShares.grant(6, 10, 7)).isEqualTo(3);
        assertThat(ProportionalShares.grant(6, 10, 12)).isZero();
        assertThat(ProportionalShares.grant(6, 10, 2)).isEqualTo(6);
    }

    @Test
    void theFallbackIsTheCapacityOverTheLastKnownReplicaCount() {
        assertThat(ProportionalShares.fallback(32, 3)).isEqualTo(10);
        assertThat(ProportionalShares.fallback(32, 0)).isEqualTo(32);
    }

    @Test
    void targetsAlwaysAddUpToTheCapacity() {
        java.util.Random r = new java.util.Random(7);
        for (int i = 0; i < 2000; i++) {
            long cap = r.nextInt(100_000);
            int n = 1 + r.nextInt(6);
            List<Demand> d = new java.util.ArrayList<>();
            for (int k = 0; k < n; k++) {
                d.add(new Demand("r" + k, r.nextInt(3) == 0 ? 0 : r.nextInt(50_000)));
            }
            assertThat(ProportionalShares.targets(cap, d).values().stream().mapToLong(Long::longValue).sum())
                    .as("%s of %d", d, cap).isEqualTo(cap);
        }
    }

    @Test
    void aHeadroomYieldsToWorkElsewhere() {
        // a prefill window of 4: a has 5 requests' work (+1 headroom), b and c are idle (headroom 1 each)
        Map<String, Long> t = ProportionalShares.targets(4, List.of(new Demand("a", 6, 1, false),
                new Demand("b", 1, 1, false), new Demand("c", 1, 1, false)));
        assertThat(t).as("before headrooms were apart from work, b got a unit a's queue needed")
                .containsExactlyInAnyOrderEntriesOf(Map.of("a", 4L, "b", 0L, "c", 0L));
        // the work fits, the headrooms do not: work in full, the rest by headroom
        Map<String, Long> fits = ProportionalShares.targets(10, List.of(new Demand("a", 8, 2, false),
                new Demand("b", 4, 2, false)));
        assertThat(fits).containsExactlyInAnyOrderEntriesOf(Map.of("a", 7L, "b", 3L));
    }

    @Test
    void aDrainingReplicaTakesNoSpare() {
        Map<String, Long> t = ProportionalShares.targets(32, List.of(new Demand("a", 3, 0, true),
                new Demand("b", 1, 1, false), new Demand("c", 1, 1, false)));
        assertThat(t).containsExactlyInAnyOrderEntriesOf(Map.of("a", 3L, "b", 15L, "c", 14L));
        // all draining: the spare still goes somewhere (evenly), the targets still add up to the capacity
        Map<String, Long> all = ProportionalShares.targets(10, List.of(new Demand("a", 2, 0, true),
                new Demand("b", 2, 0, true)));
        assertThat(all).containsExactlyInAnyOrderEntriesOf(Map.of("a", 5L, "b", 5L));
    }

    @Test
    void targetsWithHeadroomsAndDrainingAlwaysAddUpToTheCapacity() {
        java.util.Random r = new java.util.Random(11);
        for (int i = 0; i < 2000; i++) {
            long cap = r.nextInt(1_000);
            int n = 1 + r.nextInt(6);
            List<Demand> d = new java.util.ArrayList<>();
            for (int k = 0; k < n; k++) {
                long demand = r.nextInt(3) == 0 ? 0 : r.nextInt(600);
                d.add(new Demand("r" + k, demand, r.nextInt(40), r.nextInt(4) == 0));
            }
            Map<String, Long> t = ProportionalShares.targets(cap, d);
            assertThat(t.values().stream().mapToLong(Long::longValue).sum()).as("%s of %d", d, cap).isEqualTo(cap);
            assertThat(t.values()).allSatisfy(v -> assertThat(v).isNotNegative());
        }
    }
}
