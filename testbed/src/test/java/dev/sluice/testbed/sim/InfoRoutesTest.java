package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.json;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The informational GET routes a gateway probes. */
class InfoRoutesTest {
    private static SimCluster cluster;
    private final SimClient client = new SimClient();

    @BeforeAll
    static void start() throws Exception {
        cluster = SimCluster.start(2, 1, 0, SimConfig.defaults().withModel("m-1"));
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    @Test
    void everyServerHasItsOwnPorts() {
        assertThat(cluster.workers()).hasSize(3);
        assertThat(cluster.workers()).extracting(SimWorker::port).doesNotHaveDuplicates();
        assertThat(cluster.prefills().get(0).bootstrapPort()).isNotEqualTo(cluster.prefills().get(1).bootstrapPort());
        assertThat(cluster.decodes().get(0).url()).startsWith("http://127.0.0.1:");
    }

    @Test
    void healthModelsAndInfo() throws Exception {
        PrefillServer p = cluster.prefills().get(0);
        assertThat(client.get(p, "/health").statusCode()).isEqualTo(200);
        assertThat(client.get(p, "/health_generate").statusCode()).isEqualTo(200);
        JsonNode models = json(client.get(p, "/v1/models").body());
        assertThat(models.at("/data/0/id").asText()).isEqualTo("m-1");
        assertThat(models.at("/data/0/owned_by").asText()).isEqualTo("sglang");
        assertThat(json(client.get(p, "/get_model_info").body()).get("model_path").asText()).isEqualTo("m-1");
        JsonNode info = json(client.get(p, "/get_server_info").body());
        assertThat(info.get("disaggregation_mode").asText()).isEqualTo("prefill");
        assertThat(info.get("disaggregation_bootstrap_port").asInt()).isEqualTo(p.bootstrapPort());
        assertThat(info.get("version").asText()).isEqualTo("sim");
        JsonNode decodeInfo = json(client.get(cluster.decodes().get(0), "/get_server_info").body());
        assertThat(decodeInfo.get("disaggregation_mode").asText()).isEqualTo("decode");
        HttpResponse<String> missing = client.get(p, "/no/such/path");
        assertThat(missing.statusCode()).isEqualTo(404);
        assertThat(json(missing.body()).get("code").asInt()).isEqualTo(404);
    }

    @Test
    void loadAndMetricsCarryTheNamesAGatewayReads() throws Exception {
        JsonNode load = json("{\"l\":" + client.get(cluster.decodes().get(0), "/get_load").body() + "}").get("l");
        assertThat(load.get(0).get("dp_rank").asInt()).isZero();
        assertThat(load.get(0).has("num_reqs")).isTrue();
        assertThat(load.get(0).has("num_waiting_reqs")).isTrue();
        assertThat(load.get(0).has("num_tokens")).isTrue();

        HttpResponse<String> res = client.get(cluster.prefills().get(0), "/metrics");
        assertThat(res.headers().firstValue("content-type").orElse("")).startsWith("text/plain; version=0.0.4");
        String text = res.body();
        for (String name : new String[] {"num_running_reqs", "num_queue_reqs", "token_usage", "num_used_tokens",
                "max_total_num_tokens", "cache_hit_rate", "gen_throughput", "num_prefill_bootstrap_queue_reqs",
                "num_prefill_inflight_queue_reqs", "num_decode_prealloc_queue_reqs", "num_decode_transfer_queue_reqs",
                "hicache_host_used_tokens", "hicache_host_total_tokens", "num_aborted_requests_total",
                "num_bootstrap_failed_reqs_total", "num_transfer_failed_reqs_total"}) {
            assertThat(text).contains("# TYPE sglang:" + name + " ")
                    .contains("sglang:" + name + "{model_name=\"m-1\",engine_type=\"prefill\",tp_rank=\"0\","
                            + "pp_rank=\"0\",dp_rank=\"0\"} ");
        }
        assertThat(text).contains("sglang:time_to_first_token_seconds_bucket{").contains("le=\"+Inf\"");
    }
}
