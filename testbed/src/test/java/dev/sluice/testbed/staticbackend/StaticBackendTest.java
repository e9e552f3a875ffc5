package dev.sluice.testbed.staticbackend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The static backend answers what a gateway sends and polls, over real sockets. */
class StaticBackendTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHAT = "{\"model\":\"static-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @Test
    void anyPostGetsTheFixedChatCompletion() throws Exception {
        try (StaticBackend b = StaticBackend.start(new StaticBackend.Options("127.0.0.1", 0, false, Duration.ZERO))) {
            HttpResponse<String> res = post(b, "/v1/chat/completions");
            assertThat(res.statusCode()).isEqualTo(200);
            assertThat(res.headers().firstValue("content-type")).hasValue("application/json");
            assertThat(res.body().getBytes(StandardCharsets.UTF_8)).hasSize(318);
            JsonNode doc = JSON.readTree(res.body());
            assertThat(doc.get("object").asText()).isEqualTo("chat.completion");
            assertThat(doc.at("/choices/0/message/content").asText()).isNotEmpty();
            assertThat(doc.at("/usage/prompt_tokens").asInt()).isPositive();
            assertThat(doc.has("kv_transfer_params")).isFalse();
            assertThat(post(b, "/generate").body()).isEqualTo(res.body());
        }
    }

    @Test
    void prefillModeCarriesKvTransferParams() throws Exception {
        try (StaticBackend b = StaticBackend.start(new StaticBackend.Options("127.0.0.1", 0, true, Duration.ZERO))) {
            JsonNode kv = JSON.readTree(post(b, "/v1/chat/completions").body()).get("kv_transfer_params");
            assertThat(kv.get("do_remote_prefill").asBoolean()).isTrue();
            assertThat(kv.get("do_remote_decode").asBoolean()).isFalse();
            assertThat(kv.get("remote_block_ids").isArray()).isTrue();
            assertThat(kv.get("remote_host").asText()).isEqualTo("127.0.0.1");
            assertThat(kv.get("remote_port").asInt()).isPositive();
        }
    }

    @Test
    void theGetsAGatewayPollsAnswer200() throws Exception {
        try (StaticBackend b = StaticBackend.start(new StaticBackend.Options("127.0.0.1", 0, false, Duration.ZERO))) {
            for (String path : new String[] {"/health", "/health_generate", "/get_load", "/metrics", "/server_info",
                    "/get_server_info", "/get_model_info", "/v1/models?x=1"}) {
                assertThat(get(b, path).statusCode()).as(path).isEqualTo(200);
            }
            assertThat(JSON.readTree(get(b, "/get_load").body()).get(0).get("num_waiting_reqs").asInt()).isZero();
            assertThat(get(b, "/metrics").body()).contains("sglang:token_usage{");
            assertThat(JSON.readTree(get(b, "/v1/models").body()).at("/data/0/id").asText()).isEqualTo("static-model");
            assertThat(get(b, "/nothing/here").statusCode()).isEqualTo(404);
        }
    }

    @Test
    void pipelinedRequestsOnOneConnectionAreAnsweredInOrder() throws Exception {
        try (StaticBackend b = StaticBackend.start(new StaticBackend.Options("127.0.0.1", 0, false, Duration.ZERO));
             Socket s = new Socket("127.0.0.1", b.port())) {
            s.setSoTimeout(10_000);
            byte[] body = CHAT.getBytes(StandardCharsets.UTF_8);
            String req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length + "\r\n\r\n" + CHAT;
            String health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
            OutputStream out = s.getOutputStream();
            out.write((req + health + req).getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            String first = readResponse(in);
            String second = readResponse(in);
            String third = readResponse(in);
            assertThat(first).startsWith("HTTP/1.1 200 OK").contains("chat.completion");
            assertThat(second).startsWith("HTTP/1.1 200 OK").contains("content-length: 0");
            assertThat(third).isEqualTo(first);
        }
    }

    @Test
    void aDelayHoldsPostsButNotHealthChecks() throws Exception {
        Duration delay = Duration.ofMillis(1500);
        try (StaticBackend b = StaticBackend.start(new StaticBackend.Options("127.0.0.1", 0, false, delay))) {
            long start = System.nanoTime();
            CompletableFuture<HttpResponse<String>> slow = client.sendAsync(postRequest(b, "/v1/chat/completions"),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(get(b, "/health").statusCode()).isEqualTo(200);
            assertThat(slow).isNotDone(); // the health check did not wait for the model's "work"
            assertThat(slow.get().statusCode()).isEqualTo(200);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(delay);
        }
    }

    private HttpResponse<String> post(StaticBackend b, String path) throws Exception {
        return client.send(postRequest(b, path), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest postRequest(StaticBackend b, String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + b.port() + path))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(CHAT)).build();
    }

    private HttpResponse<String> get(StaticBackend b, String path) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + b.port() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Head and Content-Length body of one response, as text. */
    private static String readResponse(InputStream in) throws Exception {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int c = in.read();
            assertThat(c).as("connection closed mid-response").isNotNegative();
            head.append((char) c);
        }
        int length = 0;
        for (String line : head.toString().split("\r\n")) {
            if (line.toLowerCase().startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        return head + new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }
}
