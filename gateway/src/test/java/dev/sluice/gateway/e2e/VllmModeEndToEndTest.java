package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerTelemetry;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import dev.sluice.testbed.sim.VllmPrefillServer;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code disaggregation: vllm} through the real gateway and simulated vLLM prefill/decode servers
 * (NixlConnector-style handoff): the prefill leg's exact body, the decode leg carrying the
 * prefill's {@code kv_transfer_params}, one {@code X-Request-Id} on both legs, a client's own
 * {@code kv_transfer_params} never forwarded, a client leaving during the prefill leg, a failed
 * prefill leg, and the official OpenAI SDK as the client.
 */
class VllmModeEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 5s, request: 60s}";
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private PdTestbed start(SimConfig sim, String extra) throws Exception {
        // /health_generate every 200 ms: a vLLM worker's 404 for it must not eject anyone
        bed = PdTestbed.start(SimMode.VLLM, 1, 1, sim.withDecodeStep(Duration.ofMillis(2)), TIMEOUTS,
                extra + (extra.contains("health:") ? "" : "health: {generate_interval: 200ms}\n"));
        return bed;
    }

    private SimWorker prefill() {
        return bed.cluster.prefillWorkers().get(0);
    }

    private SimWorker decode() {
        return bed.cluster.decodeWorkers().get(0);
    }

    private static List<RecordedRequest> generations(SimWorker w) {
        List<RecordedRequest> out = new ArrayList<>();
        for (RecordedRequest r : w.journal()) {
            if (r.method().equals("POST") && r.path().startsWith("/v1/")) {
                out.add(r);
            }
        }
        return out;
    }

    private static String chat(boolean stream, String extra) {
        return "{\"model\":\"sim-model\",\"stream\":" + stream + ",\"max_tokens\":6," + (stream
                ? "\"stream_options\":{\"include_usage\":true}," : "") + extra
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hello vllm\"}]}";
    }

    @Test
    void theHandoffStreamedAndNot() throws Exception {
        start(SimConfig.defaults(), "");
        for (boolean stream : new boolean[] {true, false}) {
            HttpResponse<String> r = bed.post("/v1/chat/completions", chat(stream, "\"min_tokens\":2,"));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            if (stream) {
                assertThat(r.body()).contains("data: [DONE]").doesNotContain("\"error\"");
            } else {
                assertThat(JSON.readTree(r.body()).path("usage").path("completion_tokens").asInt()).isEqualTo(6);
            }
            RecordedRequest p = generations(prefill()).get(generations(prefill()).size() - 1);
            RecordedRequest d = generations(decode()).get(generations(decode()).size() - 1);
            JsonNode leg = p.body();
            assertThat(leg.path("stream").asBoolean(true)).isFalse();
            assertThat(leg.path("max_tokens").asInt()).isEqualTo(1);
            assertThat(leg.has("stream_options")).isFalse();
            assertThat(leg.has("min_tokens")).isFalse();
            JsonNode kv = leg.path("kv_transfer_params");
            assertThat(kv.path("do_remote_decode").asBoolean()).isTrue();
            assertThat(kv.path("do_remote_prefill").asBoolean(true)).isFalse();
            assertThat(kv.path("remote_engine_id").isNull()).isTrue();
            // the decode leg: the client's own body (its stream and max_tokens) with the prefill's parameters
            assertThat(d.body().path("stream").asBoolean()).isEqualTo(stream);
            assertThat(d.body().path("max_tokens").asInt()).isEqualTo(6);
            assertThat(d.body().path("kv_transfer_params").path("do_remote_prefill").asBoolean()).isTrue();
            assertThat(d.body().path("kv_transfer_params").path("remote_engine_id").asText())
                    .isEqualTo(((VllmPrefillServer) prefill()).engineId());
            assertThat(p.header("X-Request-Id")).isPresent().isEqualTo(d.header("X-Request-Id"));
        }
        assertThat(decode().stats().recomputedPrefills()).isZero();
        assertThat(decode().stats().kvTransferFailures()).isZero();
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill().stats().heldKvRequests() == 0)).isTrue();
    }

    @Test
    void aClientsKvTransferParamsNeverReachAWorker() throws Exception {
        start(SimConfig.defaults(), "");
        String evil = "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_host\":\"10.6.6.6\","
                + "\"remote_port\":6666,\"remote_engine_id\":\"someone-else\",\"remote_block_ids\":[1,2,3]},";
        HttpResponse<String> r = bed.post("/v1/chat/completions", chat(false, evil));
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode toPrefill = generations(prefill()).get(0).body().path("kv_transfer_params");
        JsonNode toDecode = generations(decode()).get(0).body().path("kv_transfer_params");
        assertThat(toPrefill.toString()).doesNotContain("10.6.6.6", "someone-else");
        assertThat(toDecode.toString()).doesNotContain("10.6.6.6", "someone-else", "6666");
        assertThat(toDecode.path("remote_host").asText()).isEqualTo("127.0.0.1");
    }

    @Test
    void aClientLeavingDuringThePrefillLegClosesItAndTheDecodeLegIsNeverSent() throws Exception {
        start(SimConfig.defaults().withPrefillTokensPerSecond(200), ""); // a ~1 s prefill
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":true,\"messages\":[{\"role\":"
                    + "\"user\",\"content\":\"" + "long prompt ".repeat(60) + "\"}]}");
            assertThat(eventually(Duration.ofSeconds(5), () -> generations(prefill()).size() == 1)).isTrue();
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill().stats().aborted() == 1))
                .as("the closed prefill connection aborted it on the worker").isTrue();
        assertThat(generations(decode())).isEmpty();
        assertThat(prefill().stats().heldKvRequests()).isZero();
        assertThat(bed.metric("sluice_aborts_total{cause=\"client_disconnect\"}")).isEqualTo(1);
    }

    @Test
    void aFailedPrefillLegGivesTheClientItsStatusAndNoDecodeLeg() throws Exception {
        start(SimConfig.defaults(), "retries: {max_retries: 0}\n");
        prefill().faults().setFailStatus(500);
        HttpResponse<String> r = bed.post("/v1/chat/completions", chat(true, ""));
        assertThat(r.statusCode()).isEqualTo(500);
        assertThat(JSON.readTree(r.body()).path("error").path("message").asText()).contains("prefill worker");
        assertThat(generations(decode())).isEmpty();
    }

    @Test
    void telemetryReadsTheVllmMetricNames() throws Exception {
        start(SimConfig.defaults(), "");
        assertThat(bed.post("/v1/chat/completions", chat(false, "")).statusCode()).isEqualTo(200);
        long stale = bed.gateway.config().telemetry().staleAfter().toNanos();
        for (var w : bed.gateway.workers().all()) {
            assertThat(eventually(Duration.ofSeconds(5), () -> {
                var t = w.telemetry();
                long now = System.nanoTime();
                return !Double.isNaN(t.value(WorkerTelemetry.Field.QUEUE_REQUESTS, now, stale))
                        && !Double.isNaN(t.value(WorkerTelemetry.Field.RUNNING_REQUESTS, now, stale))
                        && !Double.isNaN(t.value(WorkerTelemetry.Field.TOKEN_USAGE, now, stale));
            })).as("vllm:num_requests_waiting/running and kv_cache_usage_perc read for %s", w).isTrue();
        }
        // vLLM serves no /health_generate: that must not count against it
        assertThat(bed.gateway.workers().all()).allMatch(w -> w.state() == WorkerState.HEALTHY);
    }

    @Test
    void aDecodeLegThatCannotBeSentIsRetriedAndItsStrandedPrefillCounted() throws Exception {
        bed = PdTestbed.start(SimMode.VLLM, 1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                        .withVllmAbortTimeout(Duration.ofMillis(500)), TIMEOUTS,
                "routing: {decode: {policy: round_robin}}\nhealth: {interval: 10s}\n");
        bed.cluster.decodeWorkers().get(0).kill(); // the next health check is 10 s away: requests still go to it
        for (int i = 0; i < 4; i++) {
            HttpResponse<String> r = bed.post("/v1/chat/completions", chat(false, ""));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        double stranded = bed.metric("sluice_aborts_total{cause=\"stranded_prefill\"}");
        assertThat(stranded).isPositive();
        assertThat(bed.metric("sluice_retries_total{reason=\"connect\"}")).isEqualTo(stranded);
        // the prefill really held those blocks until its abort timeout, exactly as many as counted
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill().stats().strandedKv() == (long) stranded
                && prefill().stats().heldKvRequests() == 0)).isTrue();
        bed.cluster.decodeWorkers().get(0).restart();
    }

    @Test
    void generateIsSglangsAndIsRefused() throws Exception {
        start(SimConfig.defaults(), "");
        HttpResponse<String> r = bed.post("/generate", "{\"text\":\"hi\"}");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(r.body()).contains("disaggregation: vllm");
        assertThat(generations(prefill())).isEmpty();
    }

    @Test
    void aShortPromptSkipsThePrefillHopWhenConfigured() throws Exception {
        start(SimConfig.defaults(), "routing: {direct_decode_max_tokens: 64, prefill: {policy: round_robin}}\n");
        assertThat(bed.post("/v1/chat/completions", chat(true, "")).statusCode()).isEqualTo(200);
        assertThat(generations(prefill())).isEmpty();
        assertThat(generations(decode()).get(0).body().has("kv_transfer_params")).isFalse();
        assertThat(decode().stats().recomputedPrefills()).isEqualTo(1); // it prefilled locally, as intended
        String longPrompt = "{\"model\":\"sim-model\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\""
                + "many words ".repeat(100) + "\"}]}";
        assertThat(bed.post("/v1/chat/completions", longPrompt).statusCode()).isEqualTo(200);
        assertThat(generations(prefill())).hasSize(1);
    }

    @Test
    void theOpenAiSdkStreamedAndNot() throws Exception {
        start(SimConfig.defaults(), "");
        OpenAIClient openai = OpenAIOkHttpClient.builder().apiKey("sk-test")
                .baseUrl("http://127.0.0.1:" + bed.port() + "/v1").maxRetries(0).timeout(Duration.ofSeconds(30))
                .build();
        try {
            ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model("sim-model")
                    .addUserMessage("Say something").maxCompletionTokens(5).build();
            ChatCompletion c = openai.chat().completions().create(params);
            assertThat(c.choices().get(0).message().content()).hasValueSatisfying(t -> assertThat(t).isNotBlank());
            StringBuilder text = new StringBuilder();
            try (StreamResponse<ChatCompletionChunk> s = openai.chat().completions().createStreaming(params)) {
                s.stream().forEach(chunk -> chunk.choices().forEach(ch -> ch.delta().content().ifPresent(text::append)));
            }
            assertThat(text.toString()).isNotBlank();
        } finally {
            openai.close();
        }
        assertThat(decode().stats().recomputedPrefills()).isZero();
    }
}
