package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.routing.RoutingFixtures.FakeLoad;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LeastLoadPolicyTest {
    private static final RoutingRequest REQ = RoutingFixtures.request("prompt", 1000);

    @Test
    void prefillPicksTheFewestPendingPromptTokens() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 3);
        FakeLoad load = new FakeLoad().tokens(ws.get(0), 9000).requests(ws.get(0), 3)
                .tokens(ws.get(1), 2000).requests(ws.get(1), 1)
                .tokens(ws.get(2), 5000).requests(ws.get(2), 2);

        RoutingPolicy.Choice c = new LeastLoadPolicy(WorkerRole.PREFILL).choose(ws, REQ, load);

        assertThat(c.worker()).isSameAs(ws.get(1));
        assertThat(c.reason()).isEqualTo("least_load");
    }

    @Test
    void prefillCountsTheWorkersOwnQueueBeyondTheGatewaysWindow() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 2);
        // worker 0: an empty window but 4 requests queued by someone else (another gateway)
        // worker 1: 3000 tokens in our window, and its queue holds just those 2 requests of ours
        FakeLoad load = new FakeLoad().queue(ws.get(0), 4)
                .tokens(ws.get(1), 3000).requests(ws.get(1), 2).queue(ws.get(1), 2);

        assertThat(new LeastLoadPolicy(WorkerRole.PREFILL).choose(ws, REQ, load).worker()).isSameAs(ws.get(1));
    }

    @Test
    void unknownTelemetryAddsNothing() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 2);
        FakeLoad load = new FakeLoad().tokens(ws.get(0), 10).requests(ws.get(0), 1).queue(ws.get(1), Double.NaN);

        assertThat(new LeastLoadPolicy(WorkerRole.PREFILL).choose(ws, REQ, load).worker()).isSameAs(ws.get(1));
    }

    @Test
    void decodePicksTheFewestStreamsWeightedByKvUsage() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.DECODE, 3);
        FakeLoad load = new FakeLoad().requests(ws.get(0), 10).kv(ws.get(0), 0.1)   // 11 x 1.1 = 12.1
                .requests(ws.get(1), 6).kv(ws.get(1), 0.9)                          //  7 x 1.9 = 13.3
                .requests(ws.get(2), 8);                                            //  9 x 1   = 9 (kv unknown)

        assertThat(new LeastLoadPolicy(WorkerRole.DECODE).choose(ws, REQ, load).worker()).isSameAs(ws.get(2));
    }

    @Test
    void decodeKvUsageSeparatesWorkersWithoutStreamsOfOurs() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.DECODE, 2);
        FakeLoad load = new FakeLoad().kv(ws.get(0), 0.95).kv(ws.get(1), 0.2);

        assertThat(new LeastLoadPolicy(WorkerRole.DECODE).choose(ws, REQ, load).worker()).isSameAs(ws.get(1));
    }

    @Test
    void tiedWorkersAlternate() {
        List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 3);
        FakeLoad load = new FakeLoad().tokens(ws.get(2), 50_000).requests(ws.get(2), 1);
        LeastLoadPolicy policy = new LeastLoadPolicy(WorkerRole.PREFILL);

        List<Worker> picked = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            picked.add(policy.choose(ws, REQ, load).worker());
        }

        assertThat(picked).containsExactly(ws.get(0), ws.get(1), ws.get(0), ws.get(1), ws.get(0), ws.get(1));
    }
}
