package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** Bad input gets a clear error and costs nothing else: no worker is contacted. */
class BadInputEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults(), "{connect: 2s}", "http: {max_request_body: 64KiB}\n");
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    @BeforeEach
    void clearJournals() {
        bed.prefill().clear();
        bed.decode().clear();
    }

    @ParameterizedTest(name = "{0} {1} -> {3}")
    @CsvSource(delimiter = '|', value = {
            "/v1/chat/completions|{not json|400|invalid_json",
            "/v1/chat/completions|[1,2,3]|400|invalid_json",
            "/v1/chat/completions|\"a string\"|400|invalid_json",
            "/v1/chat/completions|{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]} {\"rid\":\"x\"}|400|invalid_json",
            "/v1/chat/completions|{\"model\":\"m\"}|400|missing_messages",
            "/v1/chat/completions|{\"messages\":[]}|400|invalid_field",
            "/v1/chat/completions|{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":0}|400|invalid_field",
            "/v1/completions|{\"model\":\"m\"}|400|missing_prompt",
            "/v1/completions|{\"prompt\":{}}|400|invalid_field",
            "/generate|{\"sampling_params\":{}}|400|missing_prompt",
            "/generate|{\"text\":42}|400|invalid_field",
            "/generate|''|400|invalid_json",
    })
    void malformedBodiesAre400WithAJsonErrorAndReachNoWorker(String path, String body, int status, String code)
            throws Exception {
        HttpResponse<String> res = bed.post(path, body);

        assertThat(res.statusCode()).isEqualTo(status);
        JsonNode error = JSON.readTree(res.body()).get("error");
        assertThat(error.get("code").asText()).isEqualTo(code);
        assertThat(error.get("type").asText()).isEqualTo("invalid_request_error");
        assertThat(error.get("message").asText()).isNotBlank();
        assertNoWorkerContacted();
    }

    @Test
    void anOversizedBodyIs413WithAJsonError() throws Exception {
        String big = "{\"text\":\"" + "x".repeat(100 * 1024) + "\"}";
        HttpResponse<String> res = bed.post("/generate", big);

        assertThat(res.statusCode()).isEqualTo(413);
        assertThat(JSON.readTree(res.body()).at("/error/code").asText()).isEqualTo("body_too_large");
        assertNoWorkerContacted();
    }

    @Test
    void anOversizedChunkedBodyIs413Too() throws Exception {
        try (RawHttpClient raw = new RawHttpClient(bed.port())) {
            raw.post("/generate", "{\"text\":\"" + "y".repeat(70 * 1024) + "\"}");
            String text = raw.readUntil("}}");
            assertThat(text).startsWith("HTTP/1.1 413");
            assertThat(text).contains("\"code\":\"body_too_large\"");
        }
        assertNoWorkerContacted();
    }

    @Test
    void unknownPathsAre404AndWrongMethods405() throws Exception {
        HttpResponse<String> missing = bed.get("/v1/embeddings");
        assertThat(missing.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(missing.body()).at("/error/code").asText()).isEqualTo("not_found");

        HttpResponse<String> wrong = bed.get("/v1/chat/completions");
        assertThat(wrong.statusCode()).isEqualTo(405);
        assertThat(JSON.readTree(wrong.body()).at("/error/code").asText()).isEqualTo("method_not_allowed");

        HttpResponse<String> postHealth = bed.http.send(HttpRequest.newBuilder(bed.uri("/health"))
                .POST(HttpRequest.BodyPublishers.ofString("{}")).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(postHealth.statusCode()).isEqualTo(405);
        assertNoWorkerContacted();
    }

    @Test
    void theConnectionStaysUsableAfterA400() throws Exception {
        try (RawHttpClient raw = new RawHttpClient(bed.port())) {
            raw.post("/generate", "{oops");
            raw.readUntil("invalid_json");
            raw.forget();
            raw.post("/generate", "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":2}}");
            assertThat(raw.readUntil("meta_info")).startsWith("HTTP/1.1 200");
        }
    }

    private static void assertNoWorkerContacted() {
        assertThat(bed.prefill().journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
        assertThat(bed.decode().journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
    }
}
