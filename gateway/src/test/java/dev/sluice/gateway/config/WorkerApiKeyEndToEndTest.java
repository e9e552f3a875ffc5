package dev.sluice.gateway.config;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code workers.api_key_env}: every request a worker gets from the gateway (generation, health
 * checks, telemetry, aborts, info GETs) carries exactly {@code Bearer <worker key>}, and never the
 * client's own {@code Authorization}. Real gateway, real simulated SGLang PD workers, on loopback.
 */
class WorkerApiKeyEndToEndTest {
    private static final String WORKER_KEY = "sk-worker-7f3a9c";
    private static final String CLIENT_KEY = "sk-client-team-a";
    private static final String CHAT = "{\"model\":\"sim-model\",\"max_tokens\":8,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    private static final String LONG_STREAM = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":100000,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"tell me a long story\"}]}";

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void workersSeeTheirKeyOnEveryRequestAndNeverTheClients() throws Exception {
        try (SimCluster cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(10)),
                SimMode.SGLANG);
             GatewayServer gateway = start(cluster, "  api_key_env: SIM_WORKER_KEY\n")) {
            exercise(gateway);
            SimWorker prefill = cluster.prefillWorkers().get(0);
            SimWorker decode = cluster.decodeWorkers().get(0);
            assertThat(eventually(Duration.ofSeconds(10), () -> paths(prefill).containsAll(Set.of("/health",
                    "/health_generate", "/v1/loads", "/metrics", "/v1/models", "/v1/chat/completions", "/abort_request"))
                    && paths(decode).containsAll(Set.of("/health", "/v1/loads", "/metrics", "/v1/chat/completions",
                    "/abort_request")))).as("prefill saw %s, decode saw %s", paths(prefill), paths(decode)).isTrue();

            for (SimWorker w : List.of(prefill, decode)) {
                for (RecordedRequest r : w.journal()) {
                    assertThat(r.header("Authorization")).as("%s %s on %s", r.method(), r.path(), w)
                            .contains("Bearer " + WORKER_KEY);
                    assertThat(r.headers().values()).as("%s %s on %s", r.method(), r.path(), w)
                            .noneMatch(v -> v.contains(CLIENT_KEY));
                }
            }
        }
    }

    @Test
    void withoutAKeyWorkersGetNoAuthorizationAtAll() throws Exception {
        try (SimCluster cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(10)),
                SimMode.SGLANG);
             GatewayServer gateway = start(cluster, "")) {
            assertThat(send(gateway, HttpRequest.newBuilder(uri(gateway, "/v1/chat/completions"))
                    .POST(HttpRequest.BodyPublishers.ofString(CHAT))).statusCode()).isEqualTo(200);
            for (SimWorker w : cluster.workers()) {
                assertThat(w.journal()).isNotEmpty()
                        .allSatisfy(r -> assertThat(r.header("Authorization")).as(r.path()).isEmpty());
            }
        }
    }

    private GatewayServer start(SimCluster cluster, String keyLine) throws Exception {
        String yaml = "listen: {host: 127.0.0.1, port: 0}\n"
                + "disaggregation: sglang\n"
                + "workers:\n" + keyLine
                + "  prefill: [ {url: \"" + cluster.prefills().get(0).url() + "\", bootstrap_port: "
                + cluster.prefills().get(0).bootstrapPort() + "} ]\n"
                + "  decode: [ {url: \"" + cluster.decodes().get(0).url() + "\"} ]\n"
                + "timeouts: {first_token: 10s, idle_stream: 5s}\n"
                + "health: {interval: 100ms, generate_interval: 100ms}\n"
                + "telemetry: {interval: 100ms}\n"
                + "admin: {enabled: false}\n";
        GatewayConfig cfg = ConfigLoader.parse(yaml, "test",
                ConfigOverrides.of(Map.of("SIM_WORKER_KEY", WORKER_KEY), List.of()));
        GatewayServer gateway = new GatewayServer(cfg).start();
        if (!gateway.awaitReady(10, TimeUnit.SECONDS)) {
            gateway.close();
            throw new IllegalStateException("the gateway never saw its workers healthy (do they accept the key?)");
        }
        return gateway;
    }

    /** A chat completion, an info GET, and a stream the client leaves (both halves get /abort_request). */
    private void exercise(GatewayServer gateway) throws Exception {
        assertThat(send(gateway, HttpRequest.newBuilder(uri(gateway, "/v1/chat/completions"))
                .header("Authorization", "Bearer " + CLIENT_KEY)
                .POST(HttpRequest.BodyPublishers.ofString(CHAT))).statusCode()).isEqualTo(200);
        assertThat(send(gateway, HttpRequest.newBuilder(uri(gateway, "/v1/models"))
                .header("Authorization", "Bearer " + CLIENT_KEY).GET()).statusCode()).isEqualTo(200);
        byte[] body = LONG_STREAM.getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", gateway.port()), 5000);
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Authorization: Bearer " + CLIENT_KEY + "\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().write(body);
            readUntil(s.getInputStream(), "chat.completion.chunk");
        } // the client leaves mid-stream
    }

    private static void readUntil(InputStream in, String marker) throws IOException {
        StringBuilder got = new StringBuilder();
        byte[] buf = new byte[4096];
        while (got.indexOf(marker) < 0) {
            int n = in.read(buf);
            if (n < 0) {
                throw new IOException("closed before '" + marker + "': " + got);
            }
            got.append(new String(buf, 0, n, StandardCharsets.UTF_8));
        }
    }

    private HttpResponse<String> send(GatewayServer gateway, HttpRequest.Builder b) throws Exception {
        return http.send(b.timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json").build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static URI uri(GatewayServer gateway, String path) {
        return URI.create("http://127.0.0.1:" + gateway.port() + path);
    }

    private static Set<String> paths(SimWorker w) {
        Set<String> out = new TreeSet<>();
        new ArrayList<>(w.journal()).forEach(r -> out.add(r.path()));
        return out;
    }
}
