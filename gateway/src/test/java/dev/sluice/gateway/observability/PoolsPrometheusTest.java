package dev.sluice.gateway.observability;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Prometheus scraping a gateway with two model pools: the shipped dashboard's admission panels
 * and the shipped saturation alert's expression answer one series per pool, and the flooded pool's
 * rejections are its own.
 */
class PoolsPrometheusTest {
    @TempDir
    Path dir;

    @Test
    void theShippedQueriesGroupByPool() throws Exception {
        Path binary = PrometheusBinaries.require("prometheus");
        SimConfig sim = SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(20));
        try (SimCluster big = SimCluster.start(1, 1, 0, sim.withModel("big-model"), SimMode.SGLANG);
             SimCluster small = SimCluster.start(0, 1, 0, sim.withModel("small-model"), SimMode.UNIFIED)) {
            String yaml = "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\nhealth: {interval: 200ms}\npools:\n"
                    + "  - name: big\n    models: [big-model]\n    workers:\n"
                    + "      prefill: [{url: " + big.prefills().get(0).url() + ", bootstrap_port: "
                    + big.prefills().get(0).bootstrapPort() + "}]\n"
                    + "      decode: [{url: " + big.decodes().get(0).url() + "}]\n"
                    + "    admission: {max_queued_requests: 1, decode: {max_inflight_streams: 1}}\n"
                    + "  - name: small\n    models: [small-model]\n    disaggregation: none\n"
                    + "    workers: {unified: [{url: " + small.unified().get(0).url() + "}]}\n";
            try (GatewayServer gw = PdTestbed.startGateway(yaml)) {
                HttpClient http = HttpClient.newHttpClient();
                List<CompletableFuture<HttpResponse<String>>> flood = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    flood.add(http.sendAsync(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + gw.port()
                            + "/v1/chat/completions"), "{\"model\":\"big-model\",\"max_tokens\":32,\"messages\":[{"
                            + "\"role\":\"user\",\"content\":\"hi " + i + "\"}]}"), HttpResponse.BodyHandlers.ofString()));
                }
                long refused = 0;
                for (CompletableFuture<HttpResponse<String>> f : flood) {
                    refused += f.get().statusCode() == 200 ? 0 : 1;
                }
                assertThat(refused).isPositive();
                Files.writeString(dir.resolve("prometheus.yml"), "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                        + "scrape_configs:\n  - job_name: sluice-gateway\n    static_configs:\n"
                        + "      - targets: ['127.0.0.1:" + gw.adminPort() + "']\n");
                try (PrometheusServer prometheus = PrometheusServer.start(binary, dir)) {
                    assertThat(eventually(Duration.ofSeconds(30), () -> pools(prometheus.result(
                            "sum by (pool) (sluice_queue_depth)")).size() == 2)).isTrue();
                    for (ShippedQueries.Query q : ShippedQueries.dashboard()) {
                        if (q.promql().contains("sluice_queue_depth") || q.promql().contains("sluice_pending_prompt")
                                || q.promql().contains("max_queued_requests")) {
                            assertThat(pools(prometheus.result(ShippedQueries.substitute(q.promql()))))
                                    .as("%s: %s", q.source(), q.promql()).containsExactly("big", "small");
                        }
                    }
                    String saturation = ShippedQueries.alerts().stream()
                            .filter(q -> q.source().equals("SluiceQueueSaturated")).findFirst().orElseThrow().promql();
                    // the alert's ratio without its threshold: one value per pool
                    String ratio = saturation.substring(0, saturation.lastIndexOf('>'));
                    assertThat(pools(prometheus.result(ratio))).containsExactly("big", "small");
                    JsonNode rejected = prometheus.result("sum by (pool) (sluice_rejections_total)");
                    for (JsonNode s : rejected) {
                        double v = s.path("value").get(1).asDouble();
                        assertThat(v).as("rejections of pool %s", s.at("/metric/pool").asText())
                                .isEqualTo(s.at("/metric/pool").asText().equals("big") ? refused : 0);
                    }
                }
            }
        }
    }

    private static Set<String> pools(JsonNode result) {
        Set<String> out = new TreeSet<>();
        result.forEach(s -> out.add(s.at("/metric/pool").asText("(none)")));
        return out;
    }
}
