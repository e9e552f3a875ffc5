package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.GatewayProcess;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code logging.requests} on a gateway process, switched by live reload: {@code failures} writes
 * lines only for requests that did not end ok, {@code none} none, {@code all} every one; the metrics
 * count every request whatever is chosen.
 */
class RequestLoggingEndToEndTest {
    private final HttpClient http = HttpClient.newHttpClient();

    private static String yaml(SimCluster sim, String requests) {
        return "listen: {host: 127.0.0.1, port: 0}\n"
                + "workers:\n  prefill:\n    - url: " + sim.prefills().get(0).url() + "\n      bootstrap_port: "
                + sim.prefills().get(0).bootstrapPort() + "\n  decode:\n    - url: " + sim.decodes().get(0).url() + "\n"
                + "health: {interval: 100ms}\nadmin: {port: 0}\n"
                + "logging: {requests: " + requests + "}\n";
    }

    private int post(int port, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString())
                .statusCode();
    }

    /** Sends one good request, one invalid one (400) and one to an unknown path (404). */
    private void traffic(int port) throws Exception {
        assertThat(post(port, "/generate", "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":4}}"))
                .isEqualTo(200);
        assertThat(post(port, "/generate", "{\"text\":\"hello\",\"stream\":\"yes\"}")).isEqualTo(400);
        assertThat(post(port, "/no/such/route", "{}")).isEqualTo(404);
    }

    private static List<String> requestLines(String log) {
        return Arrays.stream(log.split("\n"))
                .filter(l -> l.contains(" request rid=") || l.contains(" request rejected ")).toList();
    }

    /** The request lines written after {@code from} characters of the log, once {@code expected} of them are there. */
    private List<String> awaitLines(GatewayProcess g, int from, int expected) throws Exception {
        assertThat(eventually(Duration.ofSeconds(10), () -> requestLines(g.log().substring(from)).size() >= expected))
                .as("%d request lines; log:\n%s", expected, g.log()).isTrue();
        return requestLines(g.log().substring(from));
    }

    private void reload(GatewayProcess g, Path config, SimCluster sim, String requests) throws Exception {
        int before = g.log().split("result=applied", -1).length;
        Files.writeString(config, yaml(sim, requests));
        g.signal("HUP");
        assertThat(eventually(Duration.ofSeconds(10), () -> g.log().split("result=applied", -1).length > before))
                .as("reload applied; log:\n%s", g.log()).isTrue();
    }

    @Test
    void failuresOffAndAllWriteWhatTheySayAndReloadSwitchesThem(@TempDir Path dir) throws Exception {
        try (SimCluster sim = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false))) {
            Path config = dir.resolve("gateway.yaml");
            Files.writeString(config, yaml(sim, "failures"));
            try (GatewayProcess g = GatewayProcess.start(config)) {
                int port = g.port();
                assertThat(eventually(Duration.ofSeconds(10), () -> {
                    try {
                        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readiness"))
                                .build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
                    } catch (Exception e) {
                        return false;
                    }
                })).isTrue();

                int mark = g.log().length();
                traffic(port);
                List<String> failures = awaitLines(g, mark, 2);
                assertThat(failures).as("failures: the 400 and the 404, not the 200").hasSize(2);
                assertThat(failures).anyMatch(l -> l.contains("status=400") && l.contains("invalid_type"));
                assertThat(failures).anyMatch(l -> l.contains("request rejected") && l.contains("status=404"));
                assertThat(failures).noneMatch(l -> l.contains("status=200"));

                reload(g, config, sim, "none");
                mark = g.log().length();
                traffic(port);
                // nothing is written to wait for: the next reload's line bounds this round instead. One writer
                // queue (BatchingConsoleAppender) keeps the log in logging order, and the reload is logged after
                // this traffic was answered, so a request line of this round would come before it.
                reload(g, config, sim, "all");
                String log = g.log();
                assertThat(requestLines(log.substring(mark, log.indexOf("result=applied", mark))))
                        .as("none: no request line").isEmpty();

                mark = g.log().length();
                traffic(port);
                List<String> all = awaitLines(g, mark, 3);
                assertThat(all).as("all: every request").hasSize(3);
                assertThat(all).anyMatch(l -> l.contains("status=200") && l.contains("outcome=ok"));

                // the metrics counted every request of the three rounds, logged or not
                String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.adminPort()
                        + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
                assertThat(metrics).containsPattern("sluice_requests_total\\{[^}]*outcome=\"ok\"[^}]*route=\"generate\"[^}]*} 3\\.0");
            }
        }
    }
}
