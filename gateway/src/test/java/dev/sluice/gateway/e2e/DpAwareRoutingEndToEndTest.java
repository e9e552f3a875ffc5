package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RankAssignment;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Requests routed to the data-parallel ranks of simulated DP=4 workers that behave as SGLang's DP
 * controller does (testbed {@code DpDispatch}): the rank each request went to is read at the worker,
 * never from the gateway.
 */
class DpAwareRoutingEndToEndTest {
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 10s}";
    private static final ObjectMapper JSON = new ObjectMapper();
    /** 40 tokens 50 ms apart: every stream of a burst is still running when the last one is dispatched. */
    private static final SimConfig DP4 = SimConfig.defaults().withDpSize(4).withDecodeStep(Duration.ofMillis(50));

    @Test
    void unifiedWorkerGetsEveryRankItsShareAndAdminStateShowsThem() throws Exception {
        // a prefill window of 16 a rank: the burst is dispatched at once, each request where the fewest streams run
        try (PdTestbed bed = PdTestbed.start(SimMode.UNIFIED, 0, 1, DP4, TIMEOUTS,
                "admission: {prefill: {max_inflight_requests: 64}}\n")) {
            SimWorker u = bed.cluster.decodeWorkers().get(0);
            awaitRanks(bed, 4);

            List<CompletableFuture<HttpResponse<String>>> burst = burst(bed, 12, i -> "{\"model\":\"m\","
                    + "\"stream\":true,\"max_tokens\":40,\"prompt\":\"request " + i + "\",\"routed_dp_rank\":3}");
            assertThat(eventually(Duration.ofSeconds(10), () -> routed(u).size() == 12)).isTrue();
            JsonNode dp = workerState(bed).get(0).get("dp_ranks");
            for (CompletableFuture<HttpResponse<String>> f : burst) {
                assertThat(f.get().statusCode()).isEqualTo(200);
                assertThat(f.get().body()).contains("[DONE]");
            }
            // the client's own routed_dp_rank (3) did not pin anything: the gateway's rank went out instead
            assertThat(perRank(routed(u))).containsExactlyInAnyOrderEntriesOf(Map.of(0, 3L, 1, 3L, 2, 3L, 3, 3L));
            assertThat(dp.get("routed").asInt()).isEqualTo(4);
            assertThat(dp.get("detail").asText()).contains("reports dp_size 4");
            assertThat(dp.get("window_requests")).hasSize(4);
        }
    }

    @Test
    void pdPairKeepsPrefillRankAndRoomTogetherAndSpreadsTheDecodeRanks() throws Exception {
        try (PdTestbed bed = PdTestbed.start(SimMode.SGLANG, 1, 1, DP4, TIMEOUTS, "")) {
            awaitRanks(bed, 4);

            List<CompletableFuture<HttpResponse<String>>> burst = burst(bed, 8, i -> "{\"model\":\"m\",\"stream\":true,"
                    + "\"max_tokens\":40,\"prompt\":\"pd request " + i + "\"}");
            for (CompletableFuture<HttpResponse<String>> f : burst) {
                HttpResponse<String> r = f.get();
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.body()).contains("[DONE]").doesNotContain("error"); // a KV fetch from the wrong rank fails
            }
            List<RankAssignment> prefill = routed(bed.prefill());
            List<RankAssignment> decode = routed(bed.decode());
            assertThat(prefill).hasSize(8).allSatisfy(a -> assertThat(a.room() % 4).isEqualTo(a.rank()));
            // 8 streams of 2 s dispatched within the prefill's window: two on each decode rank
            assertThat(perRank(decode)).containsExactlyInAnyOrderEntriesOf(Map.of(0, 2L, 1, 2L, 2, 2L, 3, 2L));
            assertThat(bed.prefill().stats().kvTransferFailures()).isZero();
        }
    }

    /** Each rank has its own prefix cache: a conversation's next turn goes back to the prefill rank holding it. */
    @Test
    void aConversationsTurnsStayOnThePrefillRankThatCachedThem() throws Exception {
        try (PdTestbed bed = PdTestbed.start(SimMode.SGLANG, 1, 1, DP4.withPrefixCacheTokens(1 << 16), TIMEOUTS,
                    "routing: {prefill: {policy: cache_aware}, decode: {policy: least_load}}\n")) {
            awaitRanks(bed, 4);
            int conversations = 3; // not a multiple of the ranks: taking ranks in turn would move every conversation
            int turns = 3;
            for (int turn = 0; turn < turns; turn++) {
                for (int c = 0; c < conversations; c++) {
                    StringBuilder prompt = new StringBuilder(("system prompt " + c + " ").repeat(120));
                    for (int k = 0; k <= turn; k++) {
                        prompt.append(" user turn ").append(k).append(" of conversation ").append(c)
                                .append(" ".repeat(300));
                    }
                    HttpResponse<String> r = bed.post("/v1/completions",
                            "{\"model\":\"m\",\"max_tokens\":2,\"prompt\":\"" + prompt + "\"}");
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                }
            }
            List<RankAssignment> prefill = routed(bed.prefill());
            assertThat(prefill).hasSize(conversations * turns);
            for (int c = 0; c < conversations; c++) {
                int rank = prefill.get(c).rank();
                for (int turn = 1; turn < turns; turn++) {
                    assertThat(prefill.get(turn * conversations + c).rank()).as("conversation %d turn %d", c, turn)
                            .isEqualTo(rank);
                }
            }
            // every turn after the first found its conversation's prefix cached on its rank
            assertThat(bed.prefill().stats().prefixCacheHitTokens()).isGreaterThan(
                    (long) conversations * (turns - 1) * 500);
        }
    }

    @Test
    void neverLeavesTheRankToTheWorkerAndDropsTheClientsRank() throws Exception {
        try (PdTestbed bed = PdTestbed.start(SimMode.UNIFIED, 0, 1, DP4, TIMEOUTS, "routing: {dp_aware: never}\n")) {
            SimWorker u = bed.cluster.decodeWorkers().get(0);
            assertThat(eventually(Duration.ofSeconds(10), () -> worker(bed).identity().dpSize() == 4)).isTrue();
            for (CompletableFuture<HttpResponse<String>> f : burst(bed, 4, i -> "{\"model\":\"m\",\"max_tokens\":2,"
                    + "\"prompt\":\"hi\",\"routed_dp_rank\":3,\"data_parallel_rank\":3}")) {
                assertThat(f.get().statusCode()).isEqualTo(200);
            }
            assertThat(u.rankAssignments()).hasSize(4).allSatisfy(a -> assertThat(a.how())
                    .isEqualTo(RankAssignment.How.ROUND_ROBIN));
            assertThat(worker(bed).rankPlan().perRank()).isFalse();
            assertThat(workerState(bed).get(0).at("/dp_ranks/detail").asText())
                    .isEqualTo("per worker: routing.dp_aware is never");
        }
    }

    private static Worker worker(PdTestbed bed) {
        return bed.gateway.workers().all().get(0);
    }

    private static void awaitRanks(PdTestbed bed, int ranks) throws InterruptedException {
        assertThat(eventually(Duration.ofSeconds(10), () -> bed.gateway.workers().all().stream()
                .allMatch(w -> w.rankPlan().ranks() == ranks))).as("every worker's dp_size read").isTrue();
    }

    private static List<CompletableFuture<HttpResponse<String>>> burst(PdTestbed bed, int n,
                                                                       Function<Integer, String> body) {
        List<CompletableFuture<HttpResponse<String>>> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/v1/completions"), body.apply(i)),
                    HttpResponse.BodyHandlers.ofString()));
        }
        return out;
    }

    private static List<RankAssignment> routed(SimWorker w) {
        return w.rankAssignments().stream().filter(a -> a.how() == RankAssignment.How.ROUTED).toList();
    }

    private static Map<Integer, Long> perRank(List<RankAssignment> list) {
        return list.stream().collect(Collectors.groupingBy(RankAssignment::rank, Collectors.counting()));
    }

    private static JsonNode workerState(PdTestbed bed) throws Exception {
        HttpResponse<String> r = bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + bed.gateway.adminPort() + "/admin/state")).GET().build(), HttpResponse.BodyHandlers.ofString());
        return JSON.readTree(r.body()).get("workers");
    }
}
