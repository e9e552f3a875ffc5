package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Data-parallel ranks, the deprecated and new info routes, --enable-metrics and the PD queue gauges. */
class RealServerInfoTest {
    private SimCluster cluster;
    private final SimClient client = new SimClient();

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static double sample(String metrics, String name, String labelPart) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{[^}]*" + Pattern.quote(labelPart)
                + "[^}]*} (\\S+)$").matcher(metrics);
        assertThat(m.find()).as(name + " with " + labelPart + " in\n" + metrics).isTrue();
        return Double.parseDouble(m.group(1));
    }

    @Test
    void dpRanksGetOneSeriesEachWithTheirOwnPoolAndOneLoadEach() throws Exception {
        cluster = SimCluster.start(0, 1, 0, SimConfig.defaults().withDpSize(2).withPrefillTokensPerSecond(50)
                .withModel("m"), SimMode.UNIFIED);
        UnifiedServer u = cluster.unified().get(0);
        // two long prompts: one per rank (round-robin), the first prefilling, the second queued
        String prompt = "x".repeat(4000); // 1000 tokens: 20 s at 50 tokens/s
        CompletableFuture<HttpResponse<String>> a = client.post(u, "/generate", json("{\"text\":\"" + prompt + "\"}"));
        assertThat(eventually(Duration.ofSeconds(5), () -> u.stats().running() == 1)).isTrue();
        CompletableFuture<HttpResponse<String>> b = client.post(u, "/generate", json("{\"text\":\"" + prompt + "\"}"));
        assertThat(eventually(Duration.ofSeconds(5), () -> u.stats().queued() == 1)).isTrue();

        String metrics = client.get(u, "/metrics").body();
        assertThat(metrics).contains("dp_rank=\"0\"").contains("dp_rank=\"1\"");
        assertThat(sample(metrics, "sglang:num_running_reqs", "dp_rank=\"0\"")).isEqualTo(1.0);
        assertThat(sample(metrics, "sglang:num_running_reqs", "dp_rank=\"1\"")).isEqualTo(0.0);
        assertThat(sample(metrics, "sglang:num_queue_reqs", "dp_rank=\"1\"")).isEqualTo(1.0);
        double pool = sample(metrics, "sglang:max_total_num_tokens", "dp_rank=\"1\"");
        assertThat(pool).isEqualTo(DpRanks.MAX_TOTAL_TOKENS / 2.0);
        assertThat(sample(metrics, "sglang:token_usage", "dp_rank=\"1\"")).as("rank 1's own pool")
                .isEqualTo(1000 / pool);

        u.faults().setTokenUsage(0.6);
        metrics = client.get(u, "/metrics").body();
        assertThat(sample(metrics, "sglang:token_usage", "dp_rank=\"0\"")).isEqualTo(0.6);
        assertThat(sample(metrics, "sglang:token_usage", "dp_rank=\"1\"")).isEqualTo(0.6);
        assertThat(client.postNow(u, "/sim/faults", json("{\"tokenUsage\":0.25}")).statusCode()).isEqualTo(200);
        assertThat(u.faults().tokenUsage()).isEqualTo(0.25);
        assertThat(client.postNow(u, "/sim/faults", json("{\"tokenUsage\":1.5}")).statusCode()).isEqualTo(400);

        JsonNode loads = json(client.get(u, "/v1/loads").body());
        assertThat(loads.has("timestamp")).isTrue();
        assertThat(loads.get("version").asText()).isEqualTo("sim");
        assertThat(loads.get("loads")).hasSize(2);
        assertThat(loads.at("/loads/1/dp_rank").asInt()).isEqualTo(1);
        assertThat(loads.at("/loads/1/num_waiting_reqs").asInt()).isEqualTo(1);
        assertThat(loads.at("/loads/0/token_usage").asDouble()).isEqualTo(0.25);
        assertThat(loads.at("/loads/0/queues/waiting").asInt()).isZero();
        JsonNode core = json(client.get(u, "/v1/loads?include=core&dp_rank=1").body());
        assertThat(core.get("loads")).hasSize(1);
        assertThat(core.at("/loads/0/dp_rank").asInt()).isEqualTo(1);
        assertThat(core.at("/loads/0").has("queues")).isFalse();
        HttpResponse<String> bad = client.get(u, "/v1/loads?include=bogus");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(json(bad.body()).get("message").asText()).startsWith("Invalid include sections: {'bogus'}");
        JsonNode legacy = json("{\"l\":" + client.get(u, "/get_load").body() + "}").get("l");
        assertThat(legacy).hasSize(2);
        assertThat(legacy.get(1).get("num_waiting_reqs").asInt()).isEqualTo(1);
        assertThat(json(client.get(u, "/server_info").body()).get("dp_size").asInt()).isEqualTo(2);

        client.postNow(u, "/abort_request", json("{\"abort_all\":true}"));
        assertThat(a.get().statusCode()).isEqualTo(200);
        assertThat(b.get().statusCode()).isEqualTo(200);
    }

    @Test
    void vllmReportsOneSeriesPerEngine() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDpSize(3), SimMode.VLLM);
        VllmDecodeServer d = cluster.vllmDecodes().get(0);
        d.faults().setTokenUsage(0.4);
        String metrics = client.get(d, "/metrics").body();
        for (int e = 0; e < 3; e++) {
            assertThat(sample(metrics, "vllm:kv_cache_usage_perc", "engine=\"" + e + "\"")).isEqualTo(0.4);
            assertThat(sample(metrics, "vllm:num_requests_waiting", "engine=\"" + e + "\"")).isZero();
        }
    }

    @Test
    void deprecatedRoutesStillAnswerAndAreCountedNewRoutesAreNot() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withModel("m-2").withContextLength(4096));
        PrefillServer p = cluster.prefills().get(0);
        assertThat(client.get(p, "/get_load").statusCode()).isEqualTo(200);
        assertThat(client.get(p, "/get_model_info").statusCode()).isEqualTo(200);
        assertThat(client.get(p, "/get_server_info").statusCode()).isEqualTo(200);
        assertThat(p.stats().deprecatedCalls()).isEqualTo(3);
        JsonNode model = json(client.get(p, "/model_info").body());
        assertThat(model.get("model_path").asText()).isEqualTo("m-2");
        assertThat(model.get("is_generation").asBoolean()).isTrue();
        JsonNode info = json(client.get(p, "/server_info").body());
        assertThat(info.get("disaggregation_mode").asText()).isEqualTo("prefill");
        assertThat(info.get("disaggregation_bootstrap_port").asInt()).isEqualTo(p.bootstrapPort());
        assertThat(info.get("dp_size").asInt()).isEqualTo(1);
        assertThat(info.get("tp_size").asInt()).isEqualTo(1);
        assertThat(info.get("enable_metrics").asBoolean()).isTrue();
        assertThat(info.get("context_length").asInt()).isEqualTo(4096);
        assertThat(info.has("version")).isTrue();
        assertThat(json(client.get(p, "/v1/models").body()).at("/data/0/max_model_len").asInt()).isEqualTo(4096);
        assertThat(p.stats().deprecatedCalls()).as("the new routes are not deprecated").isEqualTo(3);
        assertThat(json(client.get(p, "/sim/stats").body()).get("deprecatedCalls").asLong()).isEqualTo(3);
    }

    @Test
    void metricsAre404WithoutEnableMetrics() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withEnableMetrics(false));
        DecodeServer d = cluster.decodes().get(0);
        assertThat(client.get(d, "/metrics").statusCode()).isEqualTo(404);
        assertThat(json(client.get(d, "/server_info").body()).get("enable_metrics").asBoolean()).isFalse();
    }

    @Test
    void pdWaitingRequestsAreInTheirPdQueuesNotInNumQueueReqs() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withPrefillTokensPerSecond(50)
                .withDecodeMaxBatch(1).withDecodeStep(Duration.ofMillis(50)));
        PrefillServer p = cluster.prefills().get(0);
        DecodeServer d = cluster.decodes().get(0);
        // prefill: one prefilling, one waiting; decode: both waiting for their KV
        String prompt = "y".repeat(2000);
        var one = pd("{\"text\":\"" + prompt + "\"}", p, "q1", nextRoom());
        var two = pd("{\"text\":\"" + prompt + "\"}", p, "q2", nextRoom());
        client.post(p, "/generate", one);
        client.post(d, "/generate", one);
        client.post(p, "/generate", two);
        client.post(d, "/generate", two);
        assertThat(eventually(Duration.ofSeconds(5), () -> p.stats().queued() == 1 && d.stats().queued() == 2))
                .isTrue();
        String pm = client.get(p, "/metrics").body();
        assertThat(sample(pm, "sglang:num_prefill_bootstrap_queue_reqs", "dp_rank=\"0\"")).isEqualTo(1.0);
        assertThat(sample(pm, "sglang:num_queue_reqs", "dp_rank=\"0\"")).isZero();
        assertThat(sample(pm, "sglang:num_running_reqs", "dp_rank=\"0\"")).isEqualTo(1.0);
        String dm = client.get(d, "/metrics").body();
        assertThat(sample(dm, "sglang:num_decode_transfer_queue_reqs", "dp_rank=\"0\"")).isEqualTo(2.0);
        assertThat(sample(dm, "sglang:num_queue_reqs", "dp_rank=\"0\"")).isZero();
        JsonNode loads = json(client.get(d, "/v1/loads?include=disagg").body());
        assertThat(loads.at("/loads/0/disaggregation/decode_transfer_queue_reqs").asInt()).isEqualTo(2);
        assertThat(loads.at("/loads/0/disaggregation/mode").asText()).isEqualTo("decode");
        client.postNow(p, "/abort_request", json("{\"abort_all\":true}"));
        client.postNow(d, "/abort_request", json("{\"abort_all\":true}"));
    }
}
