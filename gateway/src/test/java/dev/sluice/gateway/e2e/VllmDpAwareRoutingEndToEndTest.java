package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RankAssignment;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Simulated vLLM servers with four engines (data-parallel ranks; testbed {@code DpDispatch} takes the engine
 * {@code X-data-parallel-rank} names, as vLLM's serving layer and engine core client do) behind the gateway,
 * over loopback HTTP: the gateway counts the engines on each worker's {@code /metrics} and spreads concurrent
 * streams across them by header. Where each request went is read at the worker; every client sends its own
 * {@code X-data-parallel-rank: 3}, which must not reach a worker.
 */
class VllmDpAwareRoutingEndToEndTest {
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 10s}";
    private static final ObjectMapper JSON = new ObjectMapper();
    /** 40 tokens 50 ms apart: every stream of a burst is still running when the last one is dispatched. */
    private static final SimConfig DP4 = SimConfig.defaults().withDpSize(4).withDecodeStep(Duration.ofMillis(50));

    @Test
    void unifiedVllmWorkerGetsEachEngineItsShareByHeader() throws Exception {
        // a prefill window of 16 an engine: the burst is dispatched at once, each where the fewest streams run
        try (PdTestbed bed = PdTestbed.startVllmUnified(1, DP4, TIMEOUTS,
                "admission: {prefill: {max_inflight_requests: 64}}\n")) {
            SimWorker v = bed.cluster.prefillWorkers().get(0);
            awaitRanks(bed);
            JsonNode dp = workerState(bed).get(0).get("dp_ranks");
            assertThat(dp.get("routed").asInt()).isEqualTo(4);
            assertThat(dp.get("detail").asText()).isEqualTo(
                    "per rank: vLLM's /metrics shows 4 engines (the rank goes in X-data-parallel-rank)");

            List<CompletableFuture<HttpResponse<String>>> burst = burst(bed, 12, "vllm unified");
            assertThat(eventually(Duration.ofSeconds(10), () -> routed(v).size() == 12)).isTrue();
            // the engines' own gauges are read per engine while the streams run
            assertThat(eventually(Duration.ofSeconds(5), () -> reported(bed).size() == 4
                    && reported(bed).stream().mapToDouble(Double::doubleValue).sum() > 0)).isTrue();
            for (CompletableFuture<HttpResponse<String>> f : burst) {
                assertThat(f.get().statusCode()).isEqualTo(200);
                assertThat(f.get().body()).contains("[DONE]");
            }
            assertThat(perRank(routed(v))).containsExactlyInAnyOrderEntriesOf(Map.of(0, 3L, 1, 3L, 2, 3L, 3, 3L));
            // the header each request arrived with is the engine it ran on; no body field stands in for it
            for (RecordedRequest r : generations(v)) {
                assertThat(r.header("x-data-parallel-rank")).isPresent();
                assertThat(r.body().has("routed_dp_rank")).isFalse();
            }
        }
    }

    @Test
    void pdLegsEachGetTheirOwnEngineAndTheDecodeReadsFromThePrefillEngine() throws Exception {
        try (PdTestbed bed = PdTestbed.start(SimMode.VLLM, 1, 1, DP4, TIMEOUTS, "")) {
            SimWorker prefill = bed.cluster.prefillWorkers().get(0);
            SimWorker decode = bed.cluster.decodeWorkers().get(0);
            awaitRanks(bed);

            for (CompletableFuture<HttpResponse<String>> f : burst(bed, 8, "vllm pd")) {
                HttpResponse<String> r = f.get();
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.body()).contains("[DONE]").doesNotContain("error"); // a read from the wrong engine fails
            }
            assertThat(routed(prefill)).hasSize(8);
            // 8 streams of 2 s dispatched within the prefill's window: two on each decode engine
            assertThat(perRank(routed(decode))).containsExactlyInAnyOrderEntriesOf(Map.of(0, 2L, 1, 2L, 2, 2L, 3, 2L));
            // each decode leg names the engine of its own prefill leg (the same X-Request-Id)
            Map<String, String> prefillEngine = new HashMap<>();
            for (RecordedRequest r : generations(prefill)) {
                prefillEngine.put(r.header("x-request-id").orElseThrow(), r.header("x-data-parallel-rank").orElseThrow());
            }
            List<RecordedRequest> decodeLegs = generations(decode);
            assertThat(decodeLegs).hasSize(8).allSatisfy(r -> assertThat(
                    r.body().at("/kv_transfer_params/remote_engine_id").asText())
                    .endsWith("_dp" + prefillEngine.get(r.header("x-request-id").orElseThrow())));
            assertThat(prefill.stats().kvTransferFailures()).isZero();
            assertThat(decode.stats().kvTransferFailures()).isZero();
        }
    }

    /** Every client names engine 3; with no engines to route to, the worker balances and the header is dropped all the same. */
    @Test
    void neverLeavesTheEngineToVllmAndTheClientsHeaderStillStaysOut() throws Exception {
        try (PdTestbed bed = PdTestbed.startVllmUnified(1, DP4, TIMEOUTS, "routing: {dp_aware: never}\n")) {
            SimWorker v = bed.cluster.prefillWorkers().get(0);
            for (CompletableFuture<HttpResponse<String>> f : burst(bed, 4, "never")) {
                assertThat(f.get().statusCode()).isEqualTo(200);
            }
            assertThat(v.rankAssignments()).hasSize(4)
                    .allSatisfy(a -> assertThat(a.how()).isEqualTo(RankAssignment.How.LEAST_LOADED));
            assertThat(generations(v)).allSatisfy(r -> assertThat(r.header("x-data-parallel-rank")).isEmpty());
            assertThat(workerState(bed).get(0).at("/dp_ranks/detail").asText())
                    .isEqualTo("per worker: routing.dp_aware is never");
        }
    }

    private static void awaitRanks(PdTestbed bed) throws InterruptedException {
        assertThat(eventually(Duration.ofSeconds(10), () -> bed.gateway.workers().all().stream()
                .allMatch(w -> w.rankPlan().ranks() == 4))).as("every worker's engines counted").isTrue();
    }

    /** {@code n} concurrent streams, each client naming engine 3 itself. */
    private static List<CompletableFuture<HttpResponse<String>>> burst(PdTestbed bed, int n, String prompt) {
        List<CompletableFuture<HttpResponse<String>>> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String body = "{\"model\":\"m\",\"stream\":true,\"max_tokens\":40,\"prompt\":\"" + prompt + " " + i + "\"}";
            out.add(bed.http.sendAsync(HttpRequest.newBuilder(bed.uri("/v1/completions")).timeout(Duration.ofSeconds(30))
                    .header("Content-Type", "application/json").header("X-data-parallel-rank", "3")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()));
        }
        return out;
    }

    private static List<RankAssignment> routed(SimWorker w) {
        return w.rankAssignments().stream().filter(a -> a.how() == RankAssignment.How.ROUTED).toList();
    }

    private static List<RecordedRequest> generations(SimWorker w) {
        return w.journal().stream().filter(r -> r.path().equals("/v1/completions")).toList();
    }

    private static Map<Integer, Long> perRank(List<RankAssignment> list) {
        return list.stream().collect(Collectors.groupingBy(RankAssignment::rank, Collectors.counting()));
    }

    private static List<Double> reported(PdTestbed bed) {
        try {
            List<Double> out = new ArrayList<>();
            workerState(bed).get(0).at("/dp_ranks/reported_requests").forEach(n -> out.add(n.asDouble()));
            return out;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static JsonNode workerState(PdTestbed bed) throws Exception {
        HttpResponse<String> r = bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + bed.gateway.adminPort() + "/admin/state")).GET().build(), HttpResponse.BodyHandlers.ofString());
        return JSON.readTree(r.body()).get("workers");
    }
}
