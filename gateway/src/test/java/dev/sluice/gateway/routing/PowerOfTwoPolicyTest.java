package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.routing.RoutingFixtures.FakeLoad;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PowerOfTwoPolicyTest {
    @Test
    void neverPicksTheMostLoadedAndSpreadsOverTheRest() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 4);
        FakeLoad load = new FakeLoad();
        for (int i = 0; i < 4; i++) {
            load.tokens(ws.get(i), 1000L * (i + 1)).requests(ws.get(i), 1);
        }
        SplittableRandom seeded = new SplittableRandom(42);
        PowerOfTwoPolicy policy = new PowerOfTwoPolicy(WorkerRole.PREFILL, () -> seeded);

        Map<Worker, Integer> counts = new HashMap<>();
        for (int i = 0; i < 10_000; i++) {
            RoutingPolicy.Choice c = policy.choose(ws, RoutingFixtures.request("p", 100), load);
            assertThat(c.reason()).isEqualTo("power_of_two");
            counts.merge(c.worker(), 1, Integer::sum);
        }

        assertThat(counts).doesNotContainKey(ws.get(3));
        // the least loaded wins every pair it is in (3 of the 6 pairs), the second 2 of 6, the third 1 of 6
        assertThat(counts.get(ws.get(0))).isBetween(4500, 5500);
        assertThat(counts.get(ws.get(1))).isBetween(2900, 3800);
        assertThat(counts.get(ws.get(2))).isBetween(1300, 2100);
    }

    @Test
    void worksWithTheDefaultRandomAndOneOrTwoCandidates() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.DECODE, 2);
        FakeLoad load = new FakeLoad().requests(ws.get(0), 5);
        PowerOfTwoPolicy policy = new PowerOfTwoPolicy(WorkerRole.DECODE);

        for (int i = 0; i < 100; i++) {
            assertThat(policy.choose(ws, RoutingFixtures.request("", 0), load).worker()).isSameAs(ws.get(1));
            assertThat(policy.choose(ws.subList(0, 1), RoutingFixtures.request("", 0), load).worker()).isSameAs(ws.get(0));
        }
    }
}
