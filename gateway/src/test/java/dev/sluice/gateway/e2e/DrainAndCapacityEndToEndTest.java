package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.GatewayProcess;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway as an operator runs it: a separate process started with {@code serve --config},
 * stopped with a real SIGTERM. Also: no usable worker means 503 no_capacity.
 */
class DrainAndCapacityEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();

    private HttpResponse<String> get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private CompletableFuture<HttpResponse<String>> post(int port, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/generate"))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void sigtermDrainsFinishesWhatItCanAbortsTheRestAndExitsZero(@TempDir Path dir) throws Exception {
        try (SimCluster sim = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(20)))) {
            Path config = dir.resolve("gateway.yaml");
            Files.writeString(config, "listen: {host: 127.0.0.1, port: 0}\n"
                    + "workers:\n  prefill:\n    - url: " + sim.prefills().get(0).url() + "\n      bootstrap_port: "
                    + sim.prefills().get(0).bootstrapPort() + "\n  decode:\n    - url: " + sim.decodes().get(0).url() + "\n"
                    + "health: {interval: 100ms}\nadmission: {drain_grace: 2s}\nadmin: {port: 0}\n");
            GatewayProcess process = GatewayProcess.start(config);
            Process gateway = process.process;
            try {
                int port = process.port();
                assertThat(eventually(Duration.ofSeconds(10), () -> {
                    try {
                        return get(port, "/readiness").statusCode() == 200;
                    } catch (Exception e) {
                        return false;
                    }
                })).isTrue();
                try (RawHttpClient endless = new RawHttpClient(port)) {
                    endless.post("/generate", "{\"text\":\"forever\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":100000}}");
                    endless.readUntil("meta_info");
                    String rid = endless.header("X-Request-Id");
                    // 25 tokens at 20 ms: finishes inside the 2 s grace
                    CompletableFuture<HttpResponse<String>> shortOne = post(port,
                            "{\"text\":\"short\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":25}}");
                    assertThat(eventually(Duration.ofSeconds(5), () -> sim.decodes().get(0).stats().running() == 2)).isTrue();

                    gateway.destroy(); // SIGTERM

                    assertThat(eventually(Duration.ofSeconds(2), () -> {
                        try {
                            return get(port, "/readiness").statusCode() == 503;
                        } catch (Exception e) {
                            return false;
                        }
                    })).as("readiness goes 503 while draining").isTrue();
                    HttpResponse<String> late = post(port, "{\"text\":\"too late\"}").get();
                    assertThat(late.statusCode()).isEqualTo(503);
                    assertThat(JSON.readTree(late.body()).at("/error/code").asText()).isEqualTo("draining");
                    assertThat(late.headers().firstValue("X-Sluice-Reject-Reason")).hasValue("draining");

                    assertThat(shortOne.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
                    assertThat(shortOne.get().body()).contains("data: [DONE]");
                    String tail = endless.readUntil("data: [DONE]");
                    assertThat(tail).contains("\"code\":\"draining\"");
                    assertThat(eventually(Duration.ofSeconds(2), () -> sim.decodes().get(0).aborts().stream()
                            .anyMatch(a -> a.rid().equals(rid)))).as("the decode half was aborted").isTrue();
                }
                assertThat(gateway.waitFor(10, TimeUnit.SECONDS)).as("exited; log:\n%s", process.log()).isTrue();
                assertThat(gateway.exitValue()).as("exit code; log:\n%s", process.log()).isZero();
                assertThat(sim.decodes().get(0).awaitIdle(Duration.ofSeconds(5))).isTrue();
            } finally {
                gateway.destroyForcibly();
            }
        }
    }

    @Test
    void withoutAUsableDecodeWorkerRequestsGet503NoCapacityAndReadinessIs503(@TempDir Path dir) throws Exception {
        int deadPort;
        try (ServerSocket s = new ServerSocket(0)) {
            deadPort = s.getLocalPort(); // closed again: nothing listens there
        }
        try (SimCluster sim = SimCluster.start(1, 0, 0, SimConfig.defaults().withHealthGeneration(false))) {
            Path config = dir.resolve("gateway.yaml");
            Files.writeString(config, "listen: {host: 127.0.0.1, port: 0}\n"
                    + "workers:\n  prefill:\n    - url: " + sim.prefills().get(0).url() + "\n"
                    + "  decode:\n    - url: http://127.0.0.1:" + deadPort + "\n"
                    + "health: {interval: 100ms}\nadmin: {port: 0}\n");
            GatewayProcess process = GatewayProcess.start(config);
            Process gateway = process.process;
            try {
                int port = process.port();
                assertThat(eventually(Duration.ofSeconds(5), () -> {
                    try {
                        return get(port, "/v1/models").statusCode() == 200; // the prefill is up
                    } catch (Exception e) {
                        return false;
                    }
                })).isTrue();
                HttpResponse<String> res = post(port, "{\"text\":\"hello\"}").get();
                assertThat(res.statusCode()).isEqualTo(503);
                assertThat(JSON.readTree(res.body()).at("/error/code").asText()).isEqualTo("no_capacity");
                assertThat(res.headers().firstValue("Retry-After")).isPresent();
                assertThat(get(port, "/readiness").statusCode()).isEqualTo(503);
                assertThat(sim.prefills().get(0).journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
            } finally {
                gateway.destroy();
                gateway.waitFor(10, TimeUnit.SECONDS);
                gateway.destroyForcibly();
            }
        }
    }
}
