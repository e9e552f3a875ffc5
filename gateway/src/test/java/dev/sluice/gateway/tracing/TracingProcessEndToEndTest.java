package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static dev.sluice.gateway.tracing.Traces.awaitTrace;
import static dev.sluice.gateway.tracing.Traces.newSpanId;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static dev.sluice.gateway.tracing.Traces.server;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.GatewayProcess;
import dev.sluice.gateway.testing.OtlpReceiver;
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
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway in a process of its own (its main, its logging) exports over OTLP to the endpoint of the
 * standard OTEL_* variables, and its request log line names the trace and the server span.
 */
class TracingProcessEndToEndTest {
    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void exportsToTheOtelEndpointAndTheLogLineNamesTheTrace(@TempDir Path dir) throws Exception {
        try (OtlpReceiver collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
             SimCluster sim = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false))) {
            Path config = dir.resolve("gateway.yaml");
            // tracing: present but empty of an endpoint: OTEL_EXPORTER_OTLP_ENDPOINT (a base URL) fills it
            Files.writeString(config, "listen: {host: 127.0.0.1, port: 0}\n"
                    + "workers:\n  prefill:\n    - url: " + sim.prefills().get(0).url() + "\n      bootstrap_port: "
                    + sim.prefills().get(0).bootstrapPort() + "\n  decode:\n    - url: " + sim.decodes().get(0).url() + "\n"
                    + "health: {interval: 100ms}\nadmin: {port: 0}\ntracing: { service_name: packaged }\n");
            String base = collector.endpoint().replace("/v1/traces", "");
            try (GatewayProcess g = GatewayProcess.start(config, Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", base,
                    "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"))) {
                int port = g.port();
                String traceId = newTraceId();
                assertThat(eventually(Duration.ofSeconds(10), () -> {
                    try {
                        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/generate"))
                                .header("Content-Type", "application/json")
                                .header("traceparent", "00-" + traceId + "-" + newSpanId() + "-01")
                                .POST(HttpRequest.BodyPublishers.ofString(
                                        "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":4}}")).build(),
                                HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
                    } catch (Exception e) {
                        return false;
                    }
                })).as("log:\n%s", g.log()).isTrue();
                var server = server(awaitTrace(collector, traceId));
                assertThat(server.service()).isEqualTo("packaged");
                assertThat(eventually(Duration.ofSeconds(10), () -> Arrays.stream(g.log().split("\n"))
                        .anyMatch(l -> l.contains(" request rid=") && l.contains(" trace_id=" + traceId + " span_id="
                                + server.spanId()))))
                        .as("a request line names trace %s span %s; log:\n%s", traceId, server.spanId(), g.log()).isTrue();
                assertThat(g.log()).contains("tracing on endpoint=" + base + "/v1/traces");
            }
        }
    }
}
