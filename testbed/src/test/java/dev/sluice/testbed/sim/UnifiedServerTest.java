package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.dataEvents;
import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A server without disaggregation: prefill and decode in one, SGLang's API without the PD fields. */
class UnifiedServerTest {
    private static SimCluster cluster;
    private static UnifiedServer server;
    private final SimClient client = new SimClient();

    @BeforeAll
    static void start() throws Exception {
        cluster = SimCluster.start(0, 2, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)), SimMode.UNIFIED);
        server = cluster.unified().get(0);
    }

    @AfterEach
    void idle() throws Exception {
        for (SimWorker w : cluster.workers()) {
            assertThat(w.awaitIdle(Duration.ofSeconds(5))).as(w.toString()).isTrue();
        }
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    @Test
    void theClusterHasOnlyUnifiedServersAndRefusesPrefills() {
        assertThat(cluster.mode()).isEqualTo(SimMode.UNIFIED);
        assertThat(cluster.unified()).hasSize(2);
        assertThat(cluster.decodeWorkers()).hasSize(2);
        assertThat(cluster.prefills()).isEmpty();
        assertThat(cluster.prefillWorkers()).isEmpty();
        assertThat(cluster.workers()).extracting(SimWorker::port).doesNotHaveDuplicates();
        assertThatThrownBy(() -> SimCluster.start(1, 1, 0, SimConfig.defaults(), SimMode.UNIFIED))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UNIFIED");
    }

    @Test
    void generateChatAndCompletionsWithoutAnyBootstrapField() throws Exception {
        HttpResponse<String> gen = client.postNow(server, "/generate",
                json("{\"text\":\"Once upon a time\",\"rid\":\"u-1\",\"sampling_params\":{\"max_new_tokens\":3}}"));
        assertThat(gen.statusCode()).as(gen.body()).isEqualTo(200);
        assertThat(json(gen.body()).get("text").asText()).isEqualTo(" t0 t1 t2");
        assertThat(json(gen.body()).at("/meta_info/id").asText()).isEqualTo("u-1");

        HttpResponse<String> chat = client.postNow(server, "/v1/chat/completions",
                json("{\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
        assertThat(json(chat.body()).at("/choices/0/message/content").asText()).isEqualTo(" t0 t1");

        HttpResponse<String> comp = client.postNow(server, "/v1/completions",
                json("{\"max_tokens\":4,\"prompt\":\"abc\",\"stream\":true}"));
        assertThat(comp.headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
        List<String> events = dataEvents(comp.body());
        assertThat(events).hasSize(4 + 2).last().isEqualTo("[DONE]");
        assertThat(json(events.get(3)).at("/choices/0/text").asText()).isEqualTo(" t3");

        WorkerStats s = server.stats();
        assertThat(s.completed()).isGreaterThanOrEqualTo(3);
        assertThat(s.promptTokensProcessed()).as("it prefilled them itself").isGreaterThanOrEqualTo(4 + 5 + 1);
        assertThat(s.prefillBusySeconds()).isPositive();
    }

    @Test
    void bodiesWithDisaggregationFieldsAre400() throws Exception {
        long before = server.stats().completed();
        for (String field : List.of("\"bootstrap_room\":12", "\"bootstrap_host\":\"127.0.0.1\"",
                "\"bootstrap_port\":null", "\"kv_transfer_params\":{\"do_remote_decode\":true}")) {
            HttpResponse<String> res = client.postNow(server, "/v1/completions",
                    json("{\"prompt\":\"hi\"," + field + "}"));
            assertThat(res.statusCode()).as(field).isEqualTo(400);
            JsonNode error = json(res.body());
            assertThat(error.get("object").asText()).isEqualTo("error");
            assertThat(error.get("message").asText()).contains(field.substring(1, field.indexOf('"', 1)));
        }
        assertThat(server.stats().completed()).isEqualTo(before);
        assertThat(server.stats().running() + server.stats().queued()).isZero();
    }

    @Test
    void abortRequestStopsAStream() throws Exception {
        UnifiedServer other = cluster.unified().get(1);
        CompletableFuture<HttpResponse<String>> stream = client.post(other, "/generate",
                json("{\"text\":\"go\",\"rid\":\"long-one\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":100000}}"));
        assertThat(eventually(Duration.ofSeconds(5), () -> other.stats().running() == 1)).isTrue();

        HttpResponse<String> abort = client.postNow(other, "/abort_request", json("{\"rid\":\"long-one\"}"));

        assertThat(abort.statusCode()).isEqualTo(200);
        List<String> events = dataEvents(stream.get().body());
        assertThat(events).last().isEqualTo("[DONE]");
        assertThat(json(events.get(events.size() - 2)).at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
        assertThat(other.stats().aborted()).isEqualTo(1);
        assertThat(other.aborts()).anySatisfy(a -> assertThat(a.matched()).isTrue());
    }

    @Test
    void sglangInfoAndMetricsSayUnified() throws Exception {
        JsonNode info = json(client.get(server, "/get_server_info").body());
        assertThat(info.get("disaggregation_mode").asText()).isEqualTo("null");
        assertThat(client.get(server, "/get_load").statusCode()).isEqualTo(200);
        assertThat(client.get(server, "/health_generate").statusCode()).isEqualTo(200);
        String metrics = client.get(server, "/metrics").body();
        assertThat(metrics).contains("sglang:num_running_reqs{model_name=\"sim-model\",engine_type=\"unified\",")
                .contains("sglang:cache_hit_rate{").doesNotContain("vllm:");
    }
}
