package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A class's ceiling and default of completion tokens ({@code admission.per_class}) through the real
 * gateway and simulated SGLang workers: a request over a refusing class's ceiling gets a 400 that
 * names the ceiling and reaches no worker; over a clamping class's, both halves receive the ceiling
 * and generate that many tokens; a request that names none is given its class's default; a huge or
 * malformed value is a 400; and after each, the queue, the pending tokens and the windows are back
 * at zero.
 */
class MaxTokensEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(1)).withDefaultMaxTokens(3),
                "{connect: 2s, first_token: 30s, idle_stream: 30s}", """
                        admission:
                          per_class:
                            high: { max_tokens_ceiling: 12, on_excess: clamp, default_max_tokens: 5 }
                            normal: { max_tokens_ceiling: 20, default_max_tokens: 7, queue_updates: false }
                        """);
    }

    @AfterEach
    void settle() throws Exception {
        bed.assertQuiescent(); // queue, pending tokens, windows and in-flight counts back to zero
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    private static HttpResponse<String> send(String path, String body, String priority) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(bed.uri(path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (priority != null) {
            b.header("X-Sluice-Priority", priority);
        }
        return bed.http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String chat(String tag, String limits) {
        return "{\"model\":\"sim-model\"," + limits + (limits.isEmpty() ? "" : ",")
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + tag + " tell me\"}]}";
    }

    /** The POST bodies a worker received that carry {@code tag}. */
    private static List<JsonNode> received(SimWorker w, String tag) {
        return w.journal().stream().filter(r -> r.method().equals("POST")).map(RecordedRequest::body)
                .filter(b -> b != null && b.toString().contains(tag)).toList();
    }

    private static long completionTokens(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body()).path("usage").path("completion_tokens").asLong(-1);
    }

    @Test
    void overARefusingClassesCeilingIsA400NamingItAndNoWorkerSeesIt() throws Exception {
        HttpResponse<String> r = send("/v1/chat/completions", chat("refused-1", "\"max_tokens\":21"), null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("max_tokens_too_large");
        assertThat(error.path("param").asText()).isEqualTo("max_tokens");
        assertThat(error.path("type").asText()).isEqualTo("invalid_request_error");
        assertThat(error.path("message").asText()).contains("21").contains("20").contains("'normal'");
        // max_completion_tokens is checked too, whichever field a server would prefer
        HttpResponse<String> r2 = send("/v1/chat/completions",
                chat("refused-2", "\"max_tokens\":5,\"max_completion_tokens\":400"), "normal");
        assertThat(r2.statusCode()).as(r2.body()).isEqualTo(400);
        assertThat(JSON.readTree(r2.body()).path("error").path("param").asText()).isEqualTo("max_completion_tokens");
        assertThat(received(bed.prefill(), "refused-")).isEmpty();
        assertThat(received(bed.decode(), "refused-")).isEmpty();
        // at the ceiling is fine
        HttpResponse<String> ok = send("/v1/chat/completions", chat("at-ceiling", "\"max_tokens\":20"), "normal");
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        assertThat(completionTokens(ok)).isEqualTo(20);
    }

    @Test
    void overAClampingClassesCeilingBothHalvesReceiveTheCeiling() throws Exception {
        HttpResponse<String> r = send("/v1/chat/completions",
                chat("clamped-chat", "\"max_tokens\":5000,\"max_completion_tokens\":100000"), "high");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(completionTokens(r)).isEqualTo(12);
        for (SimWorker w : List.of(bed.prefill(), bed.decode())) {
            List<JsonNode> bodies = received(w, "clamped-chat");
            assertThat(bodies).as("%s", w).hasSize(1);
            assertThat(bodies.get(0).path("max_tokens").asLong()).isEqualTo(12);
            assertThat(bodies.get(0).path("max_completion_tokens").asLong()).isEqualTo(12);
        }
        // /generate: each prompt's sampling params of a batch
        HttpResponse<String> g = send("/generate", "{\"text\":[\"clamped-gen a\",\"clamped-gen b\"],"
                + "\"sampling_params\":{\"max_new_tokens\":999}}", "high");
        assertThat(g.statusCode()).as(g.body()).isEqualTo(200);
        JsonNode items = JSON.readTree(g.body());
        assertThat(items).hasSize(2);
        items.forEach(i -> assertThat(i.path("meta_info").path("completion_tokens").asLong()).isEqualTo(12));
        assertThat(received(bed.decode(), "clamped-gen")).singleElement()
                .satisfies(b -> assertThat(b.path("sampling_params").path("max_new_tokens").asLong()).isEqualTo(12));
    }

    @Test
    void aRequestThatNamesNoLimitIsGivenItsClassesDefault() throws Exception {
        HttpResponse<String> high = send("/v1/chat/completions", chat("default-high", ""), "high");
        assertThat(high.statusCode()).as(high.body()).isEqualTo(200);
        assertThat(completionTokens(high)).isEqualTo(5);
        assertThat(received(bed.decode(), "default-high")).singleElement()
                .satisfies(b -> assertThat(b.path("max_tokens").asLong()).isEqualTo(5));
        HttpResponse<String> normal = send("/generate", "{\"text\":\"default-normal\"}", null);
        assertThat(normal.statusCode()).as(normal.body()).isEqualTo(200);
        assertThat(JSON.readTree(normal.body()).path("meta_info").path("completion_tokens").asLong()).isEqualTo(7);
        assertThat(received(bed.prefill(), "default-normal")).singleElement()
                .satisfies(b -> assertThat(b.path("sampling_params").path("max_new_tokens").asLong()).isEqualTo(7));
        // low has no settings: the worker's own default (3 here), and the body reaches it as sent
        HttpResponse<String> low = send("/v1/chat/completions", chat("default-low", ""), "low");
        assertThat(low.statusCode()).as(low.body()).isEqualTo(200);
        assertThat(completionTokens(low)).isEqualTo(3);
        assertThat(received(bed.decode(), "default-low")).singleElement()
                .satisfies(b -> assertThat(b.has("max_tokens")).isFalse());
    }

    @Test
    void hugeNegativeOrFractionalLimitsAreA400NeverAnOverflow() throws Exception {
        for (String v : List.of("9000000000000000000", "9223372036854775807", "99999999999999999999999", "-1",
                "-9223372036854775808", "12.5", "9e18", "\"lots\"")) {
            for (String priority : new String[] {"low", "high"}) {
                HttpResponse<String> r = send("/v1/chat/completions", chat("huge", "\"max_tokens\":" + v), priority);
                assertThat(r.statusCode()).as("%s: %s", v, r.body()).isEqualTo(400);
                JsonNode error = JSON.readTree(r.body()).path("error");
                assertThat(error.path("param").asText()).as(v).isEqualTo("max_tokens");
                assertThat(error.path("message").asText()).as(v).contains("max_tokens");
            }
        }
        HttpResponse<String> gen = send("/generate",
                "{\"text\":\"huge\",\"sampling_params\":{\"max_new_tokens\":9223372036854775807}}", "low");
        assertThat(gen.statusCode()).as(gen.body()).isEqualTo(400);
        assertThat(JSON.readTree(gen.body()).path("error").path("message").asText()).contains("2147483647");
        assertThat(received(bed.prefill(), "huge")).isEmpty();
        // the largest accepted, not streamed and n = 8 (its whole answer bounds its deadline): clamped, served
        HttpResponse<String> big = send("/v1/chat/completions",
                chat("largest", "\"max_tokens\":2147483647,\"n\":1"), "high");
        assertThat(big.statusCode()).as(big.body()).isEqualTo(200);
        assertThat(completionTokens(big)).isEqualTo(12);
    }
}
