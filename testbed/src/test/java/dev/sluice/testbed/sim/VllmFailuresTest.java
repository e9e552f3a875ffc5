package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.dataEvents;
import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.VllmHandoffTest.metric;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** vLLM's handoff going wrong: refused legs, stranded and failed KV, clients that leave; vLLM's routes. */
class VllmFailuresTest {
    private static final Duration ABORT_TIMEOUT = Duration.ofSeconds(1);
    private SimCluster cluster;
    private VllmPrefillServer prefill;
    private VllmDecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeEach
    void start() throws Exception {
        // 1,000 prompt tokens a second: a 2,000-token prompt keeps the prefill busy for two seconds
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withPrefillTokensPerSecond(1_000).withVllmAbortTimeout(ABORT_TIMEOUT), SimMode.VLLM);
        prefill = cluster.vllmPrefills().get(0);
        decode = cluster.vllmDecodes().get(0);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            assertThat(prefill.awaitIdle(Duration.ofSeconds(5))).as("prefill idle").isTrue();
            assertThat(decode.awaitIdle(Duration.ofSeconds(5))).as("decode idle").isTrue();
            assertThat(eventually(Duration.ofSeconds(2), () -> prefill.stats().heldKvRequests() == 0))
                    .as("no KV left held").isTrue();
        } finally {
            cluster.close();
        }
    }

    private JsonNode kvOfPrefillLeg(ObjectNode body) throws Exception {
        HttpResponse<String> res = client.postNow(prefill, COMPLETIONS, prefillLeg(body));
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        return json(res.body()).get("kv_transfer_params");
    }

    @Test
    void aStreamedPrefillLegIs400AndStartsNothing() throws Exception {
        ObjectNode leg = prefillLeg(json("{\"prompt\":\"hi\",\"max_tokens\":3}"));
        leg.put("stream", true);

        HttpResponse<String> res = client.postNow(prefill, COMPLETIONS, leg);

        assertThat(res.statusCode()).isEqualTo(400);
        JsonNode error = json(res.body()).get("error");
        assertThat(error.get("code").asInt()).isEqualTo(400);
        assertThat(error.get("type").asText()).isEqualTo("BadRequestError");
        assertThat(error.get("message").asText()).contains("stream");
        WorkerStats s = prefill.stats();
        assertThat(s.completed() + s.aborted() + s.failed() + s.running() + s.queued()).isZero();
        assertThat(s.heldKvRequests()).isZero();
        assertThat(s.promptTokensProcessed()).isZero();
    }

    @Test
    void malformedLegsAre400AndNoKvTransferFailure() throws Exception {
        ObjectNode body = json("{\"prompt\":\"hi\",\"max_tokens\":3}");
        // the prefill leg's own params sent to the decode: the gateway forgot to replace them
        HttpResponse<String> decodeWithLegParams = client.postNow(decode, COMPLETIONS, prefillLeg(body));
        assertThat(decodeWithLegParams.statusCode()).isEqualTo(400);
        assertThat(json(decodeWithLegParams.body()).at("/error/message").asText()).contains("do_remote_prefill");

        ObjectNode noPort = json("{\"do_remote_prefill\":true,\"do_remote_decode\":false,\"remote_engine_id\":\"e\","
                + "\"remote_block_ids\":[1],\"remote_host\":\"127.0.0.1\",\"remote_request_id\":\"r\"}");
        assertThat(client.postNow(decode, COMPLETIONS, decodeLeg(body, noPort)).statusCode()).isEqualTo(400);

        ObjectNode batch = decodeLeg(json("{\"prompt\":[\"a\",\"b\"],\"max_tokens\":3}"), json("{\"do_remote_prefill\":"
                + "true,\"do_remote_decode\":false,\"remote_engine_id\":\"e\",\"remote_block_ids\":[1],\"remote_host\":"
                + "\"127.0.0.1\",\"remote_port\":9,\"remote_request_id\":\"r\"}"));
        assertThat(client.postNow(decode, COMPLETIONS, batch).statusCode()).as("a decode leg is one request")
                .isEqualTo(400);

        ObjectNode sglang = json("{\"prompt\":\"hi\",\"bootstrap_room\":7}");
        assertThat(client.postNow(prefill, COMPLETIONS, sglang).statusCode()).isEqualTo(400);

        assertThat(decode.stats().kvTransferFailures()).isZero();
        assertThat(decode.stats().recomputedPrefills()).isZero();
        assertThat(prefill.stats().completed() + decode.stats().completed()).isZero();
    }

    @Test
    void kvNoDecodeReadsIsStrandedAfterTheAbortTimeoutThenCannotBeRead() throws Exception {
        ObjectNode body = json("{\"prompt\":\"" + "z".repeat(400) + "\",\"max_tokens\":3}");
        JsonNode kv = kvOfPrefillLeg(body);
        assertThat(prefill.stats().heldKvRequests()).isEqualTo(1);
        assertThat(prefill.stats().heldKvBlocks()).isEqualTo(100 / 16 + 1);

        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().strandedKv() == 1)).isTrue();
        assertThat(prefill.stats().heldKvRequests()).isZero();
        assertThat(prefill.stats().heldKvBlocks()).isZero();
        assertThat(prefill.stats().completed()).as("the leg itself was answered").isEqualTo(1);
        assertThat(json(client.get(prefill, "/sim/stats").body()).get("strandedKv").asLong()).isEqualTo(1);
        assertThat(metric(client.get(prefill, "/metrics").body(), "sim:stranded_kv_total")).isEqualTo(1.0);

        HttpResponse<String> late = client.postNow(decode, COMPLETIONS, decodeLeg(body, kv));

        assertThat(late.statusCode()).isEqualTo(500);
        assertThat(json(late.body()).at("/error/message").asText()).contains("kv_transfer_error")
                .contains("freed unread");
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(1);
    }

    @Test
    void aClientClosingThePrefillLegAbortsItAndNothingIsHeld() throws Exception {
        ObjectNode leg = prefillLeg(json("{\"prompt\":\"" + "w".repeat(8_000) + "\",\"max_tokens\":3}"));
        try (RawHttp raw = new RawHttp(prefill)) {
            raw.send("POST", COMPLETIONS, leg.toString());
            assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().running() == 1)).isTrue();
        }

        assertThat(eventually(Duration.ofSeconds(1), () -> prefill.stats().aborted() == 1))
                .as("aborted long before its two seconds of prefill").isTrue();
        WorkerStats s = prefill.stats();
        assertThat(s.completed()).isZero();
        assertThat(s.heldKvRequests()).isZero();
        assertThat(s.promptTokensProcessed()).isLessThan(2_000);
        assertThat(s.strandedKv()).isZero();
    }

    @Test
    void aDecodeLegWhoseClientLeavesIsAborted() throws Exception {
        ObjectNode body = json("{\"prompt\":\"go\",\"max_tokens\":100000,\"stream\":true}");
        JsonNode kv = kvOfPrefillLeg(body);
        try (RawHttp raw = new RawHttp(decode)) {
            raw.send("POST", COMPLETIONS, decodeLeg(body, kv).toString());
            assertThat(raw.readLine()).startsWith("HTTP/1.1 200");
            assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().running() == 1)).isTrue();
        }

        assertThat(eventually(Duration.ofSeconds(2), () -> decode.stats().aborted() == 1)).isTrue();
        assertThat(decode.stats().kvTransferFailures()).isZero();
        assertThat(prefill.stats().heldKvRequests()).as("the decode had read the KV").isZero();
    }

    @Test
    void aFailedKvReadFailsBothSidesAndAStreamEndsWithAnErrorEvent() throws Exception {
        decode.faults().setKvFailFraction(1.0);
        ObjectNode body = json("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3,"
                + "\"stream\":true}");
        HttpResponse<String> legRes = client.postNow(prefill, CHAT, prefillLeg(body));
        JsonNode kv = json(legRes.body()).get("kv_transfer_params");

        HttpResponse<String> res = client.postNow(decode, CHAT, decodeLeg(body, kv));

        assertThat(res.statusCode()).as("a stream's headers went out first").isEqualTo(200);
        List<String> events = dataEvents(res.body());
        assertThat(events).hasSize(2).last().isEqualTo("[DONE]");
        JsonNode error = json(events.get(0)).get("error");
        assertThat(error.get("message").asText()).contains("kv_transfer_error").contains("kvFailFraction");
        assertThat(error.get("code").asInt()).isEqualTo(500);
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(1);
        assertThat(prefill.stats().kvTransferFailures()).isEqualTo(1);
        assertThat(prefill.stats().heldKvRequests()).isZero();
        assertThat(prefill.stats().strandedKv()).isZero();
    }

    @Test
    void vllmRoutesAndMetricNames() throws Exception {
        for (String path : List.of("/generate", "/abort_request", "/flush_cache")) {
            HttpResponse<String> res = client.postNow(prefill, path, json("{\"text\":\"hi\",\"rid\":\"x\"}"));
            assertThat(res.statusCode()).as(path).isEqualTo(404);
            assertThat(json(res.body()).get("detail").asText()).isEqualTo("Not Found");
        }
        for (String path : List.of("/get_load", "/health_generate", "/get_server_info")) {
            assertThat(client.get(decode, path).statusCode()).as(path).isEqualTo(404);
        }
        assertThat(client.get(decode, "/health").statusCode()).isEqualTo(200);
        assertThat(json(client.get(decode, "/v1/models").body()).at("/data/0/owned_by").asText()).isEqualTo("vllm");
        assertThat(client.postNow(prefill, "/reset_prefix_cache", json("{}")).statusCode()).isEqualTo(200);

        HttpResponse<String> res = client.get(prefill, "/metrics");
        assertThat(res.headers().firstValue("content-type").orElse("")).startsWith("text/plain; version=0.0.4");
        String text = res.body();
        for (String name : List.of("vllm:num_requests_waiting", "vllm:num_requests_running",
                "vllm:kv_cache_usage_perc", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total")) {
            assertThat(text).contains("# TYPE " + name + " ")
                    .contains(name + "{engine=\"0\",model_name=\"sim-model\"} ");
        }
        assertThat(text).contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"sim-model\",le=\"+Inf\"}")
                .doesNotContain("sglang:");
    }
}
