package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.VllmLegs.COMPLETIONS;
import static dev.sluice.testbed.sim.VllmLegs.decodeLeg;
import static dev.sluice.testbed.sim.VllmLegs.prefillLeg;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A vLLM server with four engines (data-parallel ranks) takes the engine a request names in
 * {@code X-data-parallel-rank}, exports its gauges per engine, and with PD names the prefill engine in
 * {@code remote_engine_id}: as vLLM's serving layer, engine core client and NixlConnector do (DpDispatch).
 */
class VllmDpRanksTest {
    private static final SimConfig DP4 = SimConfig.defaults().withDpSize(4).withDecodeStep(Duration.ofMillis(2));
    private final SimClient client = new SimClient();

    @Test
    void theHeaderPicksTheEngineABadOneIsIgnoredAndOneOutOfRangeIsRefused() throws Exception {
        try (SimCluster cluster = SimCluster.start(1, 0, 0, DP4, SimMode.VLLM)) {
            VllmPrefillServer v = cluster.vllmPrefills().get(0); // without kv_transfer_params: a plain vLLM server
            ObjectNode body = json("{\"model\":\"sim-model\",\"prompt\":\"hi\",\"max_tokens\":1}");
            for (String rank : new String[] {"3", "3", "1"}) {
                HttpResponse<String> r = client.post(v, COMPLETIONS, body, "X-data-parallel-rank", rank).get();
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            }
            // vLLM's _get_data_parallel_rank ignores a value that is not an integer: the server balances it
            assertThat(client.post(v, COMPLETIONS, body, "X-Data-Parallel-Rank", "two").get().statusCode()).isEqualTo(200);
            HttpResponse<String> outside = client.post(v, COMPLETIONS, body, "x-data-parallel-rank", "4").get();
            assertThat(outside.statusCode()).isEqualTo(400);
            assertThat(outside.body()).contains("data_parallel_rank 4 is out of range [0, 4).");
            assertThat(v.rankAssignments()).extracting(RankAssignment::rank).containsExactly(3, 3, 1, 0);
            assertThat(v.rankAssignments()).extracting(RankAssignment::how).containsExactly(RankAssignment.How.ROUTED,
                    RankAssignment.How.ROUTED, RankAssignment.How.ROUTED, RankAssignment.How.LEAST_LOADED);
            String metrics = client.get(v, "/metrics").body();
            for (int e = 0; e < 4; e++) {
                assertThat(metrics).contains("vllm:num_requests_running{engine=\"" + e + "\",model_name=\"sim-model\"}");
            }
            // SGLang's body field means nothing to vLLM
            client.post(v, COMPLETIONS, json("{\"model\":\"sim-model\",\"prompt\":\"hi\",\"max_tokens\":1,"
                    + "\"routed_dp_rank\":3}")).get();
            assertThat(v.rankAssignments()).last().extracting(RankAssignment::how).isEqualTo(RankAssignment.How.LEAST_LOADED);

            // without a header vLLM's balancer takes the engine with the fewest requests: engines 1-3 are busy
            ObjectNode slow = json("{\"model\":\"sim-model\",\"prompt\":\"hi\",\"max_tokens\":1000}");
            List<CompletableFuture<HttpResponse<String>>> busy = new ArrayList<>();
            for (String rank : new String[] {"1", "2", "3"}) {
                busy.add(client.post(v, COMPLETIONS, slow, "X-data-parallel-rank", rank));
            }
            assertThat(SimClient.eventually(Duration.ofSeconds(5), () -> v.rankAssignments().size() == 8)).isTrue();
            for (int i = 0; i < 2; i++) {
                assertThat(client.post(v, COMPLETIONS, body).get().statusCode()).isEqualTo(200);
                assertThat(v.rankAssignments()).last().extracting(RankAssignment::rank).isEqualTo(0);
            }
            for (CompletableFuture<HttpResponse<String>> f : busy) {
                assertThat(f.get().statusCode()).isEqualTo(200);
            }
        }
    }

    @Test
    void theDecodeReadsItsKvFromThePrefillEngineItsParamsName() throws Exception {
        try (SimCluster cluster = SimCluster.start(1, 1, 0, DP4, SimMode.VLLM)) {
            VllmPrefillServer p = cluster.vllmPrefills().get(0);
            VllmDecodeServer d = cluster.vllmDecodes().get(0);
            ObjectNode body = json("{\"model\":\"sim-model\",\"prompt\":\"" + "y".repeat(100) + "\",\"max_tokens\":3}");
            HttpResponse<String> leg = client.post(p, COMPLETIONS, prefillLeg(body), "X-Request-Id", "a",
                    "X-data-parallel-rank", "2").get();
            assertThat(leg.statusCode()).as(leg.body()).isEqualTo(200);
            JsonNode kv = json(leg.body()).get("kv_transfer_params");
            assertThat(kv.get("remote_engine_id").asText()).isEqualTo(p.engineId() + "_dp2");

            // another engine's id: that engine holds no KV for it, the read fails
            ObjectNode wrong = kv.deepCopy();
            wrong.put("remote_engine_id", p.engineId() + "_dp1");
            HttpResponse<String> refused = client.post(d, COMPLETIONS, decodeLeg(body, wrong), "X-Request-Id", "a",
                    "X-data-parallel-rank", "0").get();
            assertThat(refused.statusCode()).isEqualTo(500);
            assertThat(refused.body()).contains("kv_transfer_error");

            HttpResponse<String> leg2 = client.post(p, COMPLETIONS, prefillLeg(body), "X-Request-Id", "b",
                    "X-data-parallel-rank", "2").get();
            JsonNode kv2 = json(leg2.body()).get("kv_transfer_params");
            HttpResponse<String> ok = client.post(d, COMPLETIONS, decodeLeg(body, kv2), "X-Request-Id", "b",
                    "X-data-parallel-rank", "3").get();
            assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
            assertThat(d.rankAssignments()).last().extracting(RankAssignment::rank).isEqualTo(3);
            assertThat(p.awaitIdle(Duration.ofSeconds(5))).isTrue();
        }
    }
}
