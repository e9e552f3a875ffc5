package dev.sluice.gateway.observability;

import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A real Prometheus server run as a child process on a free loopback port, with its HTTP API. */
final class PrometheusServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Process process;
    private final Path log;
    private final int port;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private PrometheusServer(Process process, Path log, int port) {
        this.process = process;
        this.log = log;
        this.port = port;
    }

    /** Starts {@code binary} with {@code dir/prometheus.yml} (rule files beside it) and waits until ready. */
    static PrometheusServer start(Path binary, Path dir) throws IOException, InterruptedException {
        return start(binary, dir, List.of());
    }

    /** As {@link #start(Path, Path)}, with {@code flags} added (a feature flag). */
    static PrometheusServer start(Path binary, Path dir, List<String> flags) throws IOException, InterruptedException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path log = dir.resolve("prometheus.log");
        List<String> command = new java.util.ArrayList<>(List.of(binary.toString(),
                "--config.file=" + dir.resolve("prometheus.yml"),
                "--storage.tsdb.path=" + dir.resolve("data"),
                "--storage.tsdb.retention.time=1h",
                "--web.listen-address=127.0.0.1:" + port));
        command.addAll(flags);
        Process p = new ProcessBuilder(command)
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        PrometheusServer server = new PrometheusServer(p, log, port);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                fail("prometheus exited with " + p.exitValue() + ":\n" + server.logText());
            }
            if (server.ready()) {
                return server;
            }
            Thread.sleep(50); // the pace of this wait with a deadline (a poll that also fails fast on exit)
        }
        server.close();
        fail("prometheus not ready within 30 s:\n" + server.logText());
        return server;
    }

    private boolean ready() {
        try {
            return get("/-/ready").statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    String logText() {
        try {
            return Files.exists(log) ? Files.readString(log) : "(no log)";
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    int port() {
        return port;
    }

    HttpResponse<String> get(String pathAndQuery) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + pathAndQuery))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The whole JSON answer of {@code /api/v1/query} (status, data or error), whatever its HTTP status. */
    JsonNode query(String promql) throws IOException, InterruptedException {
        return JSON.readTree(get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)).body());
    }

    /** The {@code data.result} of an instant query that must succeed (the assertion names the query). */
    JsonNode result(String promql) {
        try {
            JsonNode answer = query(promql);
            org.assertj.core.api.Assertions.assertThat(answer.path("status").asText()).as("%s -> %s", promql, answer)
                    .isEqualTo("success");
            return answer.path("data").path("result");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    JsonNode api(String path) throws IOException, InterruptedException {
        return JSON.readTree(get(path).body());
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
