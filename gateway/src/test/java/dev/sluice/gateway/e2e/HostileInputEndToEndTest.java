package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.Wire;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Hostile bodies, fields, headers and paths, sent byte for byte over a raw socket (the test decides
 * every byte, no client library tidies them): each gets its 400/404 with an OpenAI-style JSON error,
 * reaches no worker, and the same connection then serves a normal request. What does reach a worker
 * carries only the gateway's own fields and an explicit list of headers.
 */
class HostileInputEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MSG = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    private static final String NORMAL = "{" + MSG + ",\"max_tokens\":2}";
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults(), "{connect: 2s}",
                "http: {json: {max_depth: 16, max_string_length: 4096, max_number_length: 24, max_name_length: 64}}\n");
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

    @AfterEach
    void quiescent() throws InterruptedException {
        bed.assertQuiescent();
    }

    @ParameterizedTest(name = "{0} {1} -> {2} {3}")
    @CsvSource(delimiter = '|', value = {
            "/v1/chat/completions|{" + MSG + ",\"max_tokens\":\"ten\"}|invalid_type|max_tokens",
            "/v1/chat/completions|{" + MSG + ",\"stream\":\"yes\"}|invalid_type|stream",
            "/v1/chat/completions|{\"messages\":{}}|invalid_field|",
            "/v1/chat/completions|{" + MSG + ",\"max_tokens\":-5}|invalid_value|max_tokens",
            "/v1/completions|{\"prompt\":\"x\",\"temperature\":\"hot\"}|invalid_type|temperature",
            "/generate|{\"text\":\"x\",\"sampling_params\":{\"max_new_tokens\":\"5\"}}|invalid_type|sampling_params.max_new_tokens",
            "/v1/chat/completions|{" + MSG + ",\"rid\":\"a\",\"rid\":\"b\"}|invalid_json|",
            "/v1/chat/completions|{" + MSG + ",\"stream\":false,\"\\u0073tream\":true}|invalid_json|",
            "/v1/chat/completions|[{" + MSG + "}]|invalid_json|",
            "/v1/chat/completions|\"just a string\"|invalid_json|",
            "/v1/chat/completions|42|invalid_json|",
            "/v1/chat/completions|null|invalid_json|",
            "/v1/chat/completions|{" + MSG + "}{\"rid\":\"x\"}|invalid_json|",
            "/v1/chat/completions|{" + MSG + ",\"seed\":1234567890123456789012345678901234567890}|json_limit|",
    })
    void aHostileBodyIs400NamingTheProblemAndReachesNoWorker(String path, String body, String code, String param)
            throws Exception {
        try (Wire wire = new Wire(bed.port())) {
            Wire.Response r = wire.exchange(post(path, body.getBytes(StandardCharsets.UTF_8), ""));
            assertError(r, 400, code);
            if (param != null) {
                assertThat(r.json().at("/error/param").asText()).isEqualTo(param);
                assertThat(r.json().at("/error/message").asText()).contains("'" + param + "'");
            }
            assertNoWorkerContacted();
            assertServesNormally(wire);
        }
    }

    @Test
    void invalidUtf8IsRefused() throws Exception {
        byte[] head = ("{\"messages\":[{\"role\":\"user\",\"content\":\"").getBytes(StandardCharsets.US_ASCII);
        byte[] tail = "\"}]}".getBytes(StandardCharsets.US_ASCII);
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.write(head);
        body.write(new byte[]{(byte) 0xc3, (byte) 0x28, (byte) 0xff});
        body.write(tail);
        try (Wire wire = new Wire(bed.port())) {
            Wire.Response r = wire.exchange(post("/v1/chat/completions", body.toByteArray(), ""));
            assertError(r, 400, "invalid_json");
            assertThat(r.json().at("/error/message").asText()).containsIgnoringCase("UTF-8");
            assertNoWorkerContacted();
            assertServesNormally(wire);
        }
    }

    @Test
    void documentsPastTheJsonLimitsAre400BeforeAnyWorkerIsChosen() throws Exception {
        String deep = "{" + MSG + ",\"x\":" + "[".repeat(20) + "]".repeat(20) + "}";
        String longString = "{\"messages\":[{\"role\":\"user\",\"content\":\"" + "y".repeat(5000) + "\"}]}";
        String longKey = "{" + MSG + ",\"" + "k".repeat(100) + "\":1}";
        Map<String, String> cases = Map.of(deep, "http.json.max_depth", longString, "http.json.max_string_length",
                longKey, "http.json.max_name_length");
        try (Wire wire = new Wire(bed.port())) {
            for (var c : cases.entrySet()) {
                Wire.Response r = wire.exchange(post("/v1/chat/completions", c.getKey().getBytes(StandardCharsets.UTF_8), ""));
                assertError(r, 400, "json_limit");
                assertThat(r.json().at("/error/message").asText()).contains(c.getValue());
            }
            assertNoWorkerContacted();
            assertServesNormally(wire);
        }
    }

    @Test
    void gatewayOwnedFieldsNeverPassFromAClientToAWorker() throws Exception {
        // plain and unicode-escaped spellings of every field the gateway owns
        String body = "{" + MSG + ",\"max_tokens\":2,\"bootstrap_host\":\"10.6.6.6\",\"bootstrap_port\":1,"
                + "\"bootstrap_room\":42,\"\\u0072id\":\"victim-rid\",\"kv_transfer_params\":{\"remote_host\":\"10.6.6.6\"}}";
        try (Wire wire = new Wire(bed.port())) {
            Wire.Response r = wire.exchange(post("/v1/chat/completions", body.getBytes(StandardCharsets.UTF_8), ""));
            assertThat(r.status()).isEqualTo(200);
        }
        for (RecordedRequest w : List.of(onlyPost(bed.prefill().journal()), onlyPost(bed.decode().journal()))) {
            JsonNode b = w.body();
            assertThat(b.path("bootstrap_host").asText()).isEqualTo("127.0.0.1");
            assertThat(b.path("bootstrap_port").asInt()).isEqualTo(bed.prefill().bootstrapPort());
            assertThat(b.path("bootstrap_room").asLong()).isNotEqualTo(42);
            assertThat(b.path("rid").asText()).startsWith("sluice-").isNotEqualTo("victim-rid");
            assertThat(b.has("kv_transfer_params")).isFalse();
            assertThat(b.toString()).doesNotContain("10.6.6.6").doesNotContain("victim");
        }
    }

    @Test
    void workersGetAnExplicitListOfHeadersNeverTheClients() throws Exception {
        String headers = "Authorization: Bearer client-secret-123\r\nCookie: session=abc\r\n"
                + "Proxy-Authorization: Basic eA==\r\nX-Forwarded-For: 10.6.6.6\r\nForwarded: for=10.6.6.6\r\n"
                + "X-Request-Id: client-chosen\r\nX-Evil: 1\r\nTE: trailers\r\nUpgrade: h2c\r\nConnection: keep-alive, Upgrade\r\n"
                + "Accept-Encoding: gzip\r\nExpect: 100-continue\r\n";
        try (Wire wire = new Wire(bed.port())) {
            Wire.Response r = wire.exchange(post("/v1/chat/completions", NORMAL.getBytes(StandardCharsets.UTF_8), headers,
                    "evil.example:6666"));
            assertThat(r.status()).isEqualTo(200);
        }
        for (RecordedRequest w : List.of(onlyPost(bed.prefill().journal()), onlyPost(bed.decode().journal()))) {
            assertThat(w.headers().keySet()).isEqualTo(Set.of("host", "content-type", "content-length", "accept",
                    "x-request-id"));
            assertThat(w.header("Host").orElseThrow()).doesNotContain("evil");
            assertThat(w.header("X-Request-Id").orElseThrow()).startsWith("sluice-");
            assertThat(w.path()).isEqualTo("/v1/chat/completions");
        }
    }

    @Test
    void onlyTheRoutesTheGatewayServesReachWorkers() throws Exception {
        String prefill = bed.prefill().url().replace("http://", "");
        List<String> targets = List.of("/abort_request", "/flush_cache", "/start_profile", "/v1/chat/completions/../../abort_request",
                "/v1/chat%2Fcompletions", "//v1/chat/completions", "http://" + prefill + "/generate", "/generate;x=1",
                "/update_weights_from_disk", "*");
        try (Wire wire = new Wire(bed.port())) {
            for (String target : targets) {
                Wire.Response r = wire.exchange(("POST " + target + " HTTP/1.1\r\nHost: " + prefill
                        + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                        .getBytes(StandardCharsets.UTF_8));
                assertError(r, 404, "not_found");
            }
            assertNoWorkerContacted();
            assertServesNormally(wire);
        }
    }

    @Test
    void anInfoRouteForwardsItsPathNeverTheClientsQuery() throws Exception {
        try (Wire wire = new Wire(bed.port())) {
            Wire.Response r = wire.exchange(("GET /v1/models?worker=http://10.6.6.6:1/&x=../flush_cache HTTP/1.1\r\n"
                    + "Host: 127.0.0.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            assertThat(r.status()).isEqualTo(200);
        }
        List<RecordedRequest> gets = bed.prefill().journal().stream().filter(q -> q.path().equals("/v1/models")).toList();
        assertThat(gets).hasSize(1);
        assertThat(gets.get(0).headers().keySet()).doesNotContain("x-forwarded-for", "cookie", "authorization");
    }

    private static RecordedRequest onlyPost(List<RecordedRequest> journal) {
        List<RecordedRequest> posts = journal.stream().filter(q -> q.method().equals("POST")).toList();
        assertThat(posts).hasSize(1);
        return posts.get(0);
    }

    private static void assertError(Wire.Response r, int status, String code) throws IOException {
        assertThat(r.status()).as(r.head()).isEqualTo(status);
        assertThat(r.headers().get("content-type")).startsWith("application/json");
        JsonNode e = r.json().get("error");
        assertThat(e.get("code").asText()).isEqualTo(code);
        assertThat(e.get("type").asText()).isEqualTo("invalid_request_error");
        assertThat(e.get("message").asText()).isNotBlank();
    }

    private static void assertServesNormally(Wire wire) throws IOException {
        Wire.Response ok = wire.exchange(post("/v1/chat/completions", NORMAL.getBytes(StandardCharsets.UTF_8), ""));
        assertThat(ok.status()).as(ok.head()).isEqualTo(200);
        assertThat(ok.json().at("/choices/0/message/content").isTextual()).isTrue();
    }

    private static void assertNoWorkerContacted() {
        assertThat(bed.prefill().journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
        assertThat(bed.decode().journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
    }

    private static byte[] post(String path, byte[] body, String extraHeaders) {
        return post(path, body, extraHeaders, "127.0.0.1");
    }

    private static byte[] post(String path, byte[] body, String extraHeaders, String host) {
        byte[] head = ("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
                + extraHeaders + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.UTF_8);
        byte[] all = new byte[head.length + body.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(body, 0, all, head.length, body.length);
        return all;
    }
}
