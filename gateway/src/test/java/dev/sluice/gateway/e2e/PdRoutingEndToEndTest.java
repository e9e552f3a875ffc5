package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The request path end to end: gateway + simulated SGLang prefill/decode servers over loopback. */
class PdRoutingEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static PdTestbed bed;

    // What a hostile client may try: point the decode at its own host, pick rooms and ids.
    private static final String HOSTILE = "\"bootstrap_host\":\"evil.example\",\"bootstrap_port\":1,"
            + "\"bootstrap_room\":42,\"rid\":\"client-rid\",\"kv_transfer_params\":{\"remote_host\":\"evil.example\"}";

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)).withDefaultMaxTokens(8),
                "{connect: 2s, first_token: 20s, idle_stream: 10s}");
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    static String body(String route, boolean stream) {
        String prompt = switch (route) {
            case "/v1/chat/completions" -> "\"model\":\"sim-model\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}]";
            case "/v1/completions" -> "\"model\":\"sim-model\",\"prompt\":\"Once upon a time\"";
            default -> "\"text\":\"Once upon a time\",\"sampling_params\":{\"max_new_tokens\":8}";
        };
        return "{" + prompt + ",\"stream\":" + stream + "," + HOSTILE + "}";
    }

    @ParameterizedTest(name = "{0} stream={1}")
    @CsvSource({"/v1/chat/completions,false", "/v1/chat/completions,true", "/v1/completions,false",
            "/v1/completions,true", "/generate,false", "/generate,true"})
    void dispatchesToBothHalvesWithOneRoomAndRelaysTheDecodeResponse(String route, boolean stream) throws Exception {
        HttpResponse<String> res = bed.post(route, body(route, stream));

        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        String rid = res.headers().firstValue("X-Request-Id").orElseThrow();
        assertThat(rid).startsWith("sluice-");
        if (stream) {
            assertThat(res.headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
            List<String> events = dataEvents(res.body());
            assertThat(events).last().isEqualTo("[DONE]");
            assertThat(events.size()).isGreaterThan(2);
            for (String e : events.subList(0, events.size() - 1)) {
                assertThat(JSON.readTree(e).isObject()).as(e).isTrue();
            }
        } else {
            JsonNode doc = JSON.readTree(res.body());
            String text = route.equals("/v1/chat/completions") ? doc.at("/choices/0/message/content").asText()
                    : route.equals("/v1/completions") ? doc.at("/choices/0/text").asText() : doc.get("text").asText();
            assertThat(text).as("decoded text in %s", res.body()).isNotBlank();
        }

        JsonNode toPrefill = seen(bed.prefill(), route, rid);
        JsonNode toDecode = seen(bed.decode(), route, rid);
        for (JsonNode sent : List.of(toPrefill, toDecode)) {
            assertThat(sent.get("rid").asText()).isEqualTo(rid);
            assertThat(sent.get("bootstrap_host").asText()).isEqualTo("127.0.0.1");
            assertThat(sent.get("bootstrap_port").asInt()).isEqualTo(bed.prefill().bootstrapPort());
            assertThat(sent.get("bootstrap_room").asLong()).isNotEqualTo(42L).isNotNegative();
            assertThat(sent.has("kv_transfer_params")).isFalse();
        }
        assertThat(toPrefill.get("bootstrap_room").asLong()).isEqualTo(toDecode.get("bootstrap_room").asLong());
    }

    @Test
    void batchedGenerateCarriesOneRoomPerItem() throws Exception {
        HttpResponse<String> res = bed.post("/generate",
                "{\"text\":[\"a b c\",\"d e f\",\"g h i\"],\"sampling_params\":{\"max_new_tokens\":4}}");

        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        JsonNode doc = JSON.readTree(res.body());
        assertThat(doc.isArray()).isTrue();
        assertThat(doc.size()).isEqualTo(3);
        String rid = res.headers().firstValue("X-Request-Id").orElseThrow();
        JsonNode p = seenBatch(bed.prefill(), rid);
        JsonNode d = seenBatch(bed.decode(), rid);
        assertThat(p.get("bootstrap_room")).isEqualTo(d.get("bootstrap_room"));
        assertThat(p.get("bootstrap_room").size()).isEqualTo(3);
        assertThat(p.get("bootstrap_room").get(0).asLong()).isNotEqualTo(p.get("bootstrap_room").get(1).asLong());
        assertThat(p.get("rid").get(2).asText()).isEqualTo(rid + "-2");
        assertThat(p.get("bootstrap_host").get(1).asText()).isEqualTo("127.0.0.1");
    }

    @Test
    void logprobsPutThePrefillsInputLogprobsInFront() throws Exception {
        HttpResponse<String> res = bed.post("/generate",
                "{\"text\":\"one two three four five six seven eight\",\"return_logprob\":true,"
                        + "\"sampling_params\":{\"max_new_tokens\":3}}");

        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        JsonNode meta = JSON.readTree(res.body()).get("meta_info");
        int promptTokens = meta.get("prompt_tokens").asInt();
        assertThat(promptTokens).isPositive();
        assertThat(meta.get("input_token_logprobs").size()).as(res.body()).isGreaterThanOrEqualTo(promptTokens);
    }

    @Test
    void streamedLogprobsAreMergedIntoEveryEvent() throws Exception {
        HttpResponse<String> res = bed.post("/generate",
                "{\"text\":\"one two three four five six seven eight\",\"return_logprob\":true,\"stream\":true,"
                        + "\"sampling_params\":{\"max_new_tokens\":3}}");

        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        List<String> events = dataEvents(res.body());
        assertThat(events).last().isEqualTo("[DONE]");
        for (String e : events.subList(0, events.size() - 1)) {
            JsonNode meta = JSON.readTree(e).get("meta_info");
            assertThat(meta.get("input_token_logprobs").size()).as(e).isGreaterThanOrEqualTo(meta.get("prompt_tokens").asInt());
        }
    }

    @Test
    void infoRoutesAreAnsweredByAPrefillWorker() throws Exception {
        HttpResponse<String> models = bed.get("/v1/models");
        assertThat(models.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(models.body()).at("/data/0/id").asText()).isEqualTo("sim-model");
        assertThat(JSON.readTree(bed.get("/get_server_info").body()).get("disaggregation_mode").asText())
                .isEqualTo("prefill");
        assertThat(bed.get("/get_model_info").statusCode()).isEqualTo(200);
        assertThat(bed.get("/health").statusCode()).isEqualTo(200);
        HttpResponse<String> ready = bed.get("/readiness");
        assertThat(ready.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(ready.body()).get("status").asText()).isEqualTo("ready");
    }

    @Test
    void metricsCountRequestsByRouteAndOutcome() throws Exception {
        bed.post("/v1/completions", body("/v1/completions", false));
        assertThat(bed.metric("sluice_requests_total{outcome=\"ok\",route=\"completions\"}")).isGreaterThanOrEqualTo(1);
    }

    static List<String> dataEvents(String sse) {
        return sse.lines().filter(l -> l.startsWith("data:")).map(l -> l.substring(5).trim()).toList();
    }

    private static JsonNode seen(SimWorker worker, String path, String rid) {
        return worker.journal().stream()
                .filter(r -> r.path().equals(path) && r.body() != null && rid.equals(r.body().path("rid").asText()))
                .map(RecordedRequest::body).findFirst()
                .orElseThrow(() -> new AssertionError(worker.url() + " never saw rid " + rid));
    }

    private static JsonNode seenBatch(SimWorker worker, String rid) {
        return worker.journal().stream()
                .filter(r -> r.body() != null && r.body().path("rid").isArray()
                        && r.body().get("rid").get(0).asText().equals(rid + "-0"))
                .map(RecordedRequest::body).findFirst()
                .orElseThrow(() -> new AssertionError(worker.url() + " never saw batch rid " + rid));
    }
}
