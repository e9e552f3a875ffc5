package dev.sluice.gateway.observability;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Exemplars end to end: with tracing on, the gateway's latency histograms carry a sampled
 * request's trace id; served as OpenMetrics to a scraper that asks for it, and a real Prometheus,
 * run with the shipped config and the exemplar-storage flag, stores them: a trace id it answers is
 * one the collector received.
 */
class PrometheusExemplarsTest {
    private static final String CHAT = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":4,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    @TempDir
    static Path dir;
    private static OtlpReceiver collector;
    private static PdTestbed bed;
    private static PrometheusServer prometheus;

    @BeforeAll
    static void start() throws Exception {
        Path binary = PrometheusBinaries.require("prometheus");
        collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)),
                "{connect: 2s, first_token: 10s, idle_stream: 10s}", "tracing:\n  otlp: { endpoint: \""
                        + collector.endpoint() + "\", protocol: http/protobuf }\n");
        ObjectNode config = (ObjectNode) ShippedQueries.YAML.readTree(ShippedFiles.prometheusConfig().toFile());
        assertThat(config.path("storage").path("exemplars").path("max_exemplars").asInt())
                .as("the shipped config sizes the exemplar store").isPositive();
        ((ObjectNode) config.path("global")).put("scrape_interval", "1s");
        config.remove("rule_files");
        ArrayNode jobs = config.putArray("scrape_configs");
        ObjectNode job = jobs.addObject().put("job_name", "sluice-gateway").put("scrape_interval", "1s")
                .put("metrics_path", "/metrics");
        job.putArray("static_configs").addObject().putArray("targets").add("127.0.0.1:" + bed.gateway.adminPort());
        Files.writeString(dir.resolve("prometheus.yml"), ShippedQueries.YAML.writeValueAsString(config));
        String flags = Files.readString(ShippedFiles.root().resolve("deploy/prometheus/prometheus.default"));
        assertThat(flags).contains("--enable-feature=exemplar-storage");
        prometheus = PrometheusServer.start(binary, dir, List.of("--enable-feature=exemplar-storage"));
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (prometheus != null) {
                prometheus.close();
            }
        } finally {
            bed.close();
            collector.close();
        }
    }

    @Test
    void aSampledRequestsTraceIdIsServedAsAnExemplarAndPrometheusStoresIt() throws Exception {
        for (int i = 0; i < 5; i++) {
            HttpResponse<String> res = bed.http.send(HttpRequest.newBuilder(bed.uri("/v1/chat/completions"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(CHAT)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(res.statusCode()).isEqualTo(200);
        }
        // the admin listener answers OpenMetrics, with exemplars, to a scraper that asks for it; 0.0.4 otherwise
        HttpResponse<String> om = bed.http.send(HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + bed.gateway.adminPort() + "/metrics"))
                .header("Accept", "application/openmetrics-text;version=1.0.0").GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(om.headers().firstValue("Content-Type").orElse("")).startsWith("application/openmetrics-text");
        assertThat(om.body()).containsPattern("sluice_request_duration_seconds_bucket\\{.*\\} \\d+(\\.\\d+)? # \\{span_id=\"[0-9a-f]{16}\",trace_id=\"[0-9a-f]{32}\"\\}")
                .containsPattern("gen_ai_server_time_to_first_token_seconds_bucket\\{.*gen_ai_operation_name=\"chat\".*# \\{")
                .endsWith("# EOF\n");
        HttpResponse<String> plain = bed.http.send(HttpRequest.newBuilder(
                java.net.URI.create("http://127.0.0.1:" + bed.gateway.adminPort() + "/metrics")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(plain.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain; version=0.0.4");
        assertThat(plain.body()).doesNotContain("trace_id=").contains("gen_ai_server_request_duration_seconds_bucket");

        Set<String> exported = new java.util.HashSet<>();
        List<String> stored = new ArrayList<>();
        boolean found = eventually(Duration.ofSeconds(30), () -> {
            try {
                long now = System.currentTimeMillis() / 1000;
                JsonNode answer = prometheus.api("/api/v1/query_exemplars?query=" + URLEncoder.encode(
                        "sluice_request_duration_seconds_bucket", StandardCharsets.UTF_8) + "&start=" + (now - 600)
                        + "&end=" + (now + 60));
                stored.clear();
                for (JsonNode series : answer.path("data")) {
                    for (JsonNode e : series.path("exemplars")) {
                        stored.add(e.path("labels").path("trace_id").asText());
                    }
                }
                exported.clear();
                exported.addAll(collector.spans().stream().map(OtlpReceiver.Received::traceId).collect(Collectors.toSet()));
                return stored.stream().anyMatch(exported::contains);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(found).as("Prometheus stored an exemplar whose trace the collector has: stored %s, exported %s, "
                + "targets %s", stored, exported, prometheus.api("/api/v1/targets").path("data").path("activeTargets"))
                .isTrue();
    }
}
