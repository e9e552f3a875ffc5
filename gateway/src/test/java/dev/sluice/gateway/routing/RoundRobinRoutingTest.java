package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.routing.RoutingFixtures.FakeLoad;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RoundRobinRoutingTest {
    @Test
    void takesTheCandidatesInTurnWhateverTheirLoad() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 3);
        FakeLoad load = new FakeLoad().tokens(ws.get(0), 100_000);
        RoundRobinRouting rr = new RoundRobinRouting();

        List<Worker> picked = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            RoutingPolicy.Choice c = rr.choose(ws, RoutingFixtures.request("p", 10), load);
            assertThat(c.reason()).isEqualTo("round_robin");
            picked.add(c.worker());
        }

        assertThat(picked).containsExactly(ws.get(0), ws.get(1), ws.get(2), ws.get(0), ws.get(1), ws.get(2));
        assertThat(rr.name()).isEqualTo("round_robin");
        assertThat(rr.stateSize(ws.get(0))).isZero();
    }

    @Test
    void aSingleCandidateIsAlwaysTaken() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.DECODE, 1);
        RoundRobinRouting rr = new RoundRobinRouting();
        for (int i = 0; i < 3; i++) {
            assertThat(rr.choose(ws, RoutingFixtures.request("", 0), new FakeLoad()).worker()).isSameAs(ws.get(0));
        }
    }
}
