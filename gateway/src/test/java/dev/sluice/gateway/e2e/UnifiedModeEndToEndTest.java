package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code disaggregation: none}: plain unified servers behind the same admission, routing, health
 * and retries; no PD field ever reaches them.
 */
class UnifiedModeEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 5s, request: 60s}";
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private PdTestbed start(int workers, String extra) throws Exception {
        bed = PdTestbed.start(SimMode.UNIFIED, 0, workers, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)),
                TIMEOUTS, extra);
        return bed;
    }

    private static long generations(SimWorker w) {
        return w.journal().stream().filter(r -> r.method().equals("POST") && !r.path().equals("/abort_request"))
                .count();
    }

    @Test
    void everyRouteStreamedAndNotWithoutAnyPdField() throws Exception {
        start(1, "");
        // the client's own PD fields must not reach a unified server (it refuses them with a 400)
        String pd = "\"bootstrap_room\":7,\"bootstrap_host\":\"10.6.6.6\",\"rid\":\"mine\",\"kv_transfer_params\":{},";
        for (boolean stream : new boolean[] {true, false}) {
            HttpResponse<String> chat = bed.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"max_tokens\":5,"
                    + pd + "\"stream\":" + stream + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
            assertThat(chat.statusCode()).as(chat.body()).isEqualTo(200);
            assertThat(chat.body()).doesNotContain("\"error\"");
            HttpResponse<String> gen = bed.post("/generate", "{\"text\":\"hello\"," + pd + "\"stream\":" + stream
                    + ",\"sampling_params\":{\"max_new_tokens\":4}}");
            assertThat(gen.statusCode()).as(gen.body()).isEqualTo(200);
            HttpResponse<String> completion = bed.post("/v1/completions", "{\"model\":\"sim-model\",\"prompt\":\"once\","
                    + "\"max_tokens\":3,\"stream\":" + stream + "}");
            assertThat(completion.statusCode()).as(completion.body()).isEqualTo(200);
        }
        SimWorker w = bed.cluster.decodeWorkers().get(0);
        for (RecordedRequest r : w.journal()) {
            if (r.body() != null && r.method().equals("POST")) {
                assertThat(r.body().has("bootstrap_room") || r.body().has("kv_transfer_params")
                        || r.body().has("bootstrap_host")).as(r.body().toString()).isFalse();
            }
        }
        assertThat(bed.metric("sluice_worker_state{role=\"unified\",state=\"healthy\",worker=\""
                + w.host() + ":" + w.port() + "\"}")).isEqualTo(1.0);
    }

    @Test
    void aClientLeavingMidStreamAbortsItsRequest() throws Exception {
        start(1, "");
        SimWorker w = bed.cluster.decodeWorkers().get(0);
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":100000,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"a long story\"}]}");
            client.readUntil("chat.completion.chunk");
        }
        assertThat(eventually(Duration.ofSeconds(2), () -> w.stats().aborted() == 1)).isTrue();
        assertThat(bed.metric("sluice_aborts_total{cause=\"client_disconnect\"}")).isEqualTo(1);
    }

    @Test
    void aDeadWorkerIsRetriedOnAnotherAndEjected() throws Exception {
        start(2, "routing: {prefill: {policy: round_robin}}\n");
        SimWorker dead = bed.cluster.decodeWorkers().get(0);
        dead.kill();
        for (int i = 0; i < 6; i++) {
            HttpResponse<String> r = bed.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"max_tokens\":3,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"hi " + i + "\"}]}");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        assertThat(generations(bed.cluster.decodeWorkers().get(1))).isEqualTo(6);
        assertThat(bed.metric("sluice_retries_total{reason=\"connect\"}")).isPositive();
    }

    @Test
    void theOpenAiSdk() throws Exception {
        start(1, "");
        OpenAIClient openai = OpenAIOkHttpClient.builder().apiKey("sk-test")
                .baseUrl("http://127.0.0.1:" + bed.port() + "/v1").maxRetries(0).timeout(Duration.ofSeconds(30)).build();
        try {
            Completion c = openai.completions().create(CompletionCreateParams.builder().model("sim-model")
                    .prompt("Once upon a time").maxTokens(4).build());
            assertThat(c.choices().get(0).text()).isNotBlank();
            StringBuilder text = new StringBuilder();
            try (StreamResponse<ChatCompletionChunk> s = openai.chat().completions().createStreaming(
                    ChatCompletionCreateParams.builder().model("sim-model").addUserMessage("Say something")
                            .maxCompletionTokens(5).build())) {
                s.stream().forEach(chunk -> chunk.choices().forEach(ch -> ch.delta().content().ifPresent(text::append)));
            }
            assertThat(text.toString()).isNotBlank();
        } finally {
            openai.close();
        }
    }
}
