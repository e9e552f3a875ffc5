package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.dataEvents;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.VllmLegs.CHAT;
import static dev.sluice.testbed.sim.VllmLegs.COMPLETIONS;
import static dev.sluice.testbed.sim.VllmLegs.decodeLeg;
import static dev.sluice.testbed.sim.VllmLegs.prefillLeg;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** vLLM's sequential handoff (NixlConnector), driven by hand as vLLM's proxy drives it. */
class VllmHandoffTest {
    private SimCluster cluster;
    private VllmPrefillServer prefill;
    private VllmDecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeEach
    void start() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)), SimMode.VLLM);
        prefill = cluster.vllmPrefills().get(0);
        decode = cluster.vllmDecodes().get(0);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            assertThat(prefill.awaitIdle(Duration.ofSeconds(5))).as("prefill idle").isTrue();
            assertThat(decode.awaitIdle(Duration.ofSeconds(5))).as("decode idle").isTrue();
            assertThat(prefill.stats().heldKvRequests()).as("no KV left held").isZero();
        } finally {
            cluster.close();
        }
    }

    /** Step 1 and 2: the prefill's answer, checked; returns its kv_transfer_params. */
    private JsonNode prefillStep(String path, ObjectNode body, String requestId) throws Exception {
        HttpResponse<String> res = client.post(prefill, path, prefillLeg(body), "X-Request-Id", requestId).get();
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        JsonNode answer = json(res.body());
        assertThat(answer.at("/usage/completion_tokens").asInt()).isEqualTo(1);
        JsonNode kv = answer.get("kv_transfer_params");
        assertThat(kv.get("do_remote_prefill").asBoolean()).isTrue();
        assertThat(kv.get("do_remote_decode").asBoolean()).isFalse();
        assertThat(kv.get("remote_engine_id").asText()).isEqualTo(prefill.engineId());
        assertThat(kv.get("remote_host").asText()).isEqualTo("127.0.0.1");
        assertThat(kv.get("remote_port").asInt()).isEqualTo(prefill.kvPort()).isNotEqualTo(prefill.port());
        assertThat(kv.get("remote_request_id").asText()).contains(requestId);
        assertThat(kv.get("tp_size").asInt()).isEqualTo(1);
        int prompt = answer.at("/usage/prompt_tokens").asInt();
        assertThat(kv.get("remote_block_ids").size()).isEqualTo((prompt + 15) / 16);
        return kv;
    }

    /** The value of the first sample of {@code name} in Prometheus text. */
    static double metric(String text, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{[^}]*} (\\S+)$").matcher(text);
        assertThat(m.find()).as(name + " in " + text).isTrue();
        return Double.parseDouble(m.group(1));
    }

    @Test
    void chatHandoffEndToEndNotStreamed() throws Exception {
        ObjectNode body = json("{\"model\":\"sim-model\",\"max_tokens\":3,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(200) + "\"}]}");
        HttpResponse<String> leg = client.post(prefill, CHAT, prefillLeg(body), "X-Request-Id", "req-1").get();
        JsonNode answer = json(leg.body());
        assertThat(answer.get("id").asText()).isEqualTo("chatcmpl-req-1");
        assertThat(answer.at("/choices/0/message/content").asText()).isEqualTo(" t0");
        assertThat(answer.at("/choices/0/finish_reason").asText()).isEqualTo("length");
        assertThat(answer.at("/usage/prompt_tokens").asInt()).isEqualTo(50 + 4);
        JsonNode kv = answer.get("kv_transfer_params");
        assertThat(kv.get("remote_block_ids").size()).isEqualTo(4);
        assertThat(prefill.stats().heldKvRequests()).isEqualTo(1);
        assertThat(prefill.stats().heldKvBlocks()).isEqualTo(4);
        assertThat(prefill.stats().running() + prefill.stats().queued()).as("answered: not running").isZero();
        assertThat(metric(client.get(prefill, "/metrics").body(), "vllm:kv_cache_usage_perc"))
                .as("held blocks occupy the KV cache").isPositive();

        HttpResponse<String> res = client.post(decode, CHAT, decodeLeg(body, kv), "X-Request-Id", "req-1").get();

        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        JsonNode decoded = json(res.body());
        assertThat(decoded.get("id").asText()).isEqualTo("chatcmpl-req-1");
        assertThat(decoded.at("/choices/0/message/content").asText()).isEqualTo(" t0 t1 t2");
        assertThat(decoded.at("/usage/prompt_tokens").asInt()).isEqualTo(54);
        assertThat(decoded.at("/usage/completion_tokens").asInt()).isEqualTo(3);
        assertThat(decoded.has("kv_transfer_params")).isFalse();
        WorkerStats p = prefill.stats();
        assertThat(metric(client.get(prefill, "/metrics").body(), "vllm:kv_cache_usage_perc")).isZero();
        assertThat(p.heldKvRequests()).isZero();
        assertThat(p.heldKvBlocks()).isZero();
        assertThat(p.completed()).isEqualTo(1);
        assertThat(p.strandedKv()).isZero();
        assertThat(p.promptTokensProcessed()).isEqualTo(54);
        WorkerStats d = decode.stats();
        assertThat(d.completed()).isEqualTo(1);
        assertThat(d.kvTransferFailures()).isZero();
        assertThat(d.recomputedPrefills()).isZero();
        assertThat(d.promptTokensProcessed()).as("the decode computed no prompt").isZero();
        for (SimWorker w : List.of(prefill, decode)) {
            assertThat(w.journal()).anySatisfy(r -> {
                assertThat(r.path()).isEqualTo(CHAT);
                assertThat(r.header("X-Request-Id")).hasValue("req-1");
                assertThat(r.header("x-request-id")).hasValue("req-1");
                assertThat(r.body().has("kv_transfer_params")).isTrue();
            });
        }
    }

    @Test
    void completionsHandoffWithAStreamedDecodeLeg() throws Exception {
        ObjectNode body = json("{\"model\":\"sim-model\",\"max_tokens\":4,\"stream\":true,"
                + "\"stream_options\":{\"include_usage\":true},\"prompt\":\"" + "y".repeat(300) + "\"}");
        JsonNode kv = prefillStep(COMPLETIONS, body, "req-s");
        assertThat(prefill.journal().get(prefill.journal().size() - 1).body().get("stream").asBoolean()).isFalse();

        HttpResponse<String> res = client.post(decode, COMPLETIONS, decodeLeg(body, kv), "X-Request-Id", "req-s").get();

        assertThat(res.statusCode()).isEqualTo(200);
        assertThat(res.headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
        List<String> events = dataEvents(res.body());
        assertThat(events).hasSize(4 + 3).last().isEqualTo("[DONE]");
        JsonNode first = json(events.get(0));
        assertThat(first.get("id").asText()).isEqualTo("cmpl-req-s");
        assertThat(first.at("/choices/0/text").asText()).isEqualTo(" t0");
        assertThat(json(events.get(4)).at("/choices/0/finish_reason").asText()).isEqualTo("length");
        assertThat(json(events.get(5)).at("/usage/completion_tokens").asInt()).isEqualTo(4);
        assertThat(json(events.get(5)).at("/usage/prompt_tokens").asInt()).isEqualTo(75);
        assertThat(decode.stats().kvTransferFailures()).isZero();
        assertThat(prefill.stats().heldKvRequests()).isZero();
    }

    @Test
    void theKvIsReadOnceASecondDecodeLegFailsWithAKvTransferError() throws Exception {
        ObjectNode body = json("{\"max_tokens\":2,\"prompt\":\"once\"}");
        JsonNode kv = prefillStep(COMPLETIONS, body, "req-once");
        assertThat(client.postNow(decode, COMPLETIONS, decodeLeg(body, kv)).statusCode()).isEqualTo(200);

        HttpResponse<String> again = client.postNow(decode, COMPLETIONS, decodeLeg(body, kv));

        assertThat(again.statusCode()).isEqualTo(500);
        JsonNode error = json(again.body()).get("error");
        assertThat(error.get("message").asText()).contains("kv_transfer_error").contains("KV transfer failed")
                .contains("already read");
        assertThat(error.get("code").asInt()).isEqualTo(500);
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(1);
        assertThat(decode.stats().failed()).isEqualTo(1);
    }

    @Test
    void aDecodeLegWithoutKvTransferParamsPrefillsOnTheDecodeAndIsCounted() throws Exception {
        ObjectNode body = json("{\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"no params\"}]}");

        HttpResponse<String> res = client.post(decode, CHAT, body, "X-Request-Id", "dropped").get();

        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        assertThat(json(res.body()).at("/choices/0/message/content").asText()).isEqualTo(" t0 t1");
        WorkerStats d = decode.stats();
        assertThat(d.recomputedPrefills()).isEqualTo(1);
        assertThat(d.promptTokensProcessed()).isEqualTo(json(res.body()).at("/usage/prompt_tokens").asInt());
        assertThat(d.prefillBusySeconds()).isPositive();
        assertThat(d.kvTransferFailures()).isZero();
        assertThat(prefill.stats().completed()).as("the prefill never saw it").isZero();
        assertThat(client.get(decode, "/metrics").body()).contains("sim:recomputed_prefills_total{");
    }

    @Test
    void aPlainRequestOnTheVllmPrefillIsServedInFull() throws Exception {
        HttpResponse<String> res = client.postNow(prefill, COMPLETIONS, json("{\"max_tokens\":3,\"prompt\":\"hi\"}"));

        assertThat(res.statusCode()).isEqualTo(200);
        JsonNode answer = json(res.body());
        assertThat(answer.at("/choices/0/text").asText()).isEqualTo(" t0 t1 t2");
        assertThat(answer.has("kv_transfer_params")).isFalse();
        assertThat(prefill.stats().heldKvRequests()).isZero();
    }

    @Test
    void aRestartedPrefillHasANewEngineAndKnowsNoBlocks() throws Exception {
        ObjectNode body = json("{\"max_tokens\":2,\"prompt\":\"before the crash\"}");
        JsonNode kv = prefillStep(COMPLETIONS, body, "req-crash");
        String engine = prefill.engineId();
        prefill.kill();
        prefill.restart();
        assertThat(prefill.engineId()).isNotEqualTo(engine);
        assertThat(prefill.stats().heldKvRequests()).isZero();

        HttpResponse<String> res = client.postNow(decode, COMPLETIONS, decodeLeg(body, kv));

        assertThat(res.statusCode()).isEqualTo(500);
        assertThat(json(res.body()).at("/error/message").asText()).contains("kv_transfer_error").contains("404");
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(1);
    }
}
