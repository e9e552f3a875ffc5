package dev.sluice.gateway.observability;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.observability.ShippedQueries.Query;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.SimConfig;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shipped Prometheus configuration, alert rules and dashboard queries against a real
 * Prometheus scraping a real gateway and simulated workers, after traffic with known outcomes:
 * successes, each kind of rejection, a client leaving mid-stream, a failing prefill.
 */
@DisabledIfSystemProperty(named = PrometheusBinaries.SKIP_PROPERTY, matches = "true",
        disabledReason = "-Dsluice.skipPrometheus=true: skipped; without it these tests need /usr/bin/prometheus"
                + " and /usr/bin/promtool, which `bash .ci/run` installs")
class PrometheusIntegrationTest {
    private static final Duration SCRAPED = Duration.ofSeconds(30);
    private static final int TOO_LARGE = 2;
    private static final int GENERATE_OK_SMALL = 3;

    @TempDir
    static Path dir;
    private static PdTestbed bed;
    private static PrometheusServer prometheus;

    @BeforeAll
    static void start() throws Exception {
        Path binary = PrometheusBinaries.require("prometheus");
        // prefill at 2,000 tokens/s with a window of one request: a 3,000-token prompt holds it 1.5 s
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withPrefillTokensPerSecond(2_000)
                        .withDecodeStep(Duration.ofMillis(5)).withDefaultMaxTokens(4),
                "{connect: 2s, first_token: 30s, idle_stream: 10s}", """
                        admission:
                          max_queued_requests: 1
                          max_pending_tokens: 4000
                          max_request_tokens: 3500
                          queue_timeout: 20s
                          prefill: { max_inflight_requests: 1, max_inflight_tokens: 100000 }
                          initial_prefill_tokens_per_second: 2000
                        """);
        Files.copy(ShippedFiles.alerts(), dir.resolve("alerts.yml"));
        Files.writeString(dir.resolve("prometheus.yml"), scrapeConfig());
        prometheus = PrometheusServer.start(binary, dir);
        driveTraffic();
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (prometheus != null) {
                prometheus.close();
            }
        } finally {
            if (bed != null) {
                bed.close();
            }
        }
    }

    /**
     * The shipped prometheus.yml with every interval at 1 s and its targets pointed at this
     * test's ports; its job names and rule_files are kept as they are.
     */
    private static String scrapeConfig() throws IOException {
        ObjectNode config = (ObjectNode) ShippedQueries.YAML.readTree(ShippedFiles.prometheusConfig().toFile());
        ((ObjectNode) config.path("global")).put("scrape_interval", "1s").put("evaluation_interval", "1s");
        Map<String, List<String>> targets = Map.of(
                "sluice-gateway", List.of("127.0.0.1:" + bed.gateway.adminPort()), // as shipped: the admin listener
                "sglang-prefill", List.of(hostPort(bed.prefill().url())),
                "sglang-decode", List.of(hostPort(bed.decode().url())),
                // no GPU here: GpuPanelsPrometheusTest scrapes these jobs from fake GPU expositions
                "dcgm-exporter", List.of(), "node-exporter", List.of());
        for (JsonNode job : config.path("scrape_configs")) {
            String name = job.path("job_name").asText();
            assertThat(targets).as("shipped job %s has a target in this test", name).containsKey(name);
            ((ObjectNode) job).put("scrape_interval", "1s");
            for (JsonNode sc : job.path("static_configs")) {
                ArrayNode t = ((ObjectNode) sc).putArray("targets");
                targets.get(name).forEach(t::add);
            }
        }
        assertThat(config.path("rule_files").toString()).contains("alerts.yml");
        return ShippedQueries.YAML.writeValueAsString(config);
    }

    private static String hostPort(String url) {
        URI u = URI.create(url);
        return u.getHost() + ":" + u.getPort();
    }

    /** A /generate body of about {@code tokens} prompt tokens at the estimator's 4 bytes per token. */
    private static String prompt(int tokens, String tag) {
        return "{\"text\":\"" + tag + " " + "abc ".repeat(tokens) + "\",\"sampling_params\":{\"max_new_tokens\":2}}";
    }

    private static CompletableFuture<HttpResponse<String>> send(String path, String body) {
        return bed.http.sendAsync(HttpRequest.newBuilder(bed.uri(path)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void expectStatus(CompletableFuture<HttpResponse<String>> res, int status, String reason)
            throws Exception {
        HttpResponse<String> r = res.get();
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        if (reason != null) {
            assertThat(r.headers().firstValue("X-Sluice-Reject-Reason")).hasValue(reason);
        }
    }

    private static void driveTraffic() throws Exception {
        // rejected at once, before any worker answered (the token estimator has learned nothing yet)
        for (int i = 0; i < TOO_LARGE; i++) {
            expectStatus(send("/generate", prompt(4000, "huge" + i)), 413, "request_too_large");
        }
        // one long prefill holds the only prefill slot
        CompletableFuture<HttpResponse<String>> a = send("/generate", prompt(3000, "a"));
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1
                && bed.gateway.admission().snapshot().pendingTokens() > 2500)).isTrue();
        expectStatus(send("/generate", prompt(2000, "c")), 429, "token_budget_exceeded");
        CompletableFuture<HttpResponse<String>> b = send("/generate", prompt(100, "b"));
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().queued() == 1)).isTrue();
        expectStatus(send("/generate", prompt(100, "d")), 429, "queue_full");
        expectStatus(a, 200, null);
        expectStatus(b, 200, null);

        for (int i = 0; i < GENERATE_OK_SMALL; i++) {
            expectStatus(send("/generate", "{\"text\":\"hello " + i + "\"}"), 200, null);
        }
        for (int i = 0; i < 2; i++) {
            expectStatus(send("/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":true,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"hi " + i + "\"}]}"), 200, null);
        }
        expectStatus(send("/v1/completions", "{\"model\":\"sim-model\",\"prompt\":\"hi\"}"), 200, null);

        // a client that leaves mid-stream
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":100000,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"tell me a long story\"}]}");
            client.readUntil("chat.completion.chunk");
        }
        assertThat(bed.decode().awaitIdle(Duration.ofSeconds(5))).isTrue();

        // a prefill that fails
        bed.prefill().faults().setFailStatus(500);
        try {
            expectStatus(send("/generate", "{\"text\":\"fails\"}"), 500, null);
        } finally {
            bed.prefill().faults().reset();
        }
        bed.assertQuiescent();
    }

    // ---- helpers over Prometheus's API ----

    private static JsonNode result(String promql) {
        return prometheus.result(promql);
    }

    /** The single value {@code promql} returns, or NaN when it returns nothing. */
    private static double value(String promql) {
        JsonNode r = result(promql);
        return r.size() == 0 ? Double.NaN : Double.parseDouble(r.get(0).path("value").get(1).asText());
    }

    /** Waits until Prometheus has scraped the value the gateway now holds, then checks it. */
    private static void assertScraped(String promql, double expected) throws InterruptedException {
        eventually(SCRAPED, () -> value(promql) == expected);
        assertThat(value(promql)).as("%s in Prometheus", promql).isEqualTo(expected);
    }

    private static void assertScrapedAtLeast(String promql, double min) throws InterruptedException {
        eventually(SCRAPED, () -> value(promql) >= min);
        assertThat(value(promql)).as("%s in Prometheus", promql).isGreaterThanOrEqualTo(min);
    }

    // ---- tests ----

    @Test
    void everyTargetOfTheShippedConfigIsScrapedAndUp() throws Exception {
        assertScraped("count(up == 1)", 3);
        assertThat(result("up{job=\"sluice-gateway\"}")).hasSize(1);
        assertThat(result("up{job=\"sglang-prefill\",role=\"prefill\"}")).hasSize(1);
        assertThat(result("up{job=\"sglang-decode\",role=\"decode\"}")).hasSize(1);
    }

    @Test
    void rejectionsAreCountedByReasonExactly() throws Exception {
        assertScraped("sluice_rejections_total{reason=\"request_too_large\"}", TOO_LARGE);
        assertScraped("sluice_rejections_total{reason=\"token_budget_exceeded\"}", 1);
        assertScraped("sluice_rejections_total{reason=\"queue_full\"}", 1);
        assertScraped("sum(sluice_rejections_total)", TOO_LARGE + 2);
    }

    @Test
    void requestsAreCountedByRouteAndOutcome() throws Exception {
        assertScraped("sluice_requests_total{route=\"generate\",outcome=\"ok\"}", 2 + GENERATE_OK_SMALL);
        assertScraped("sluice_requests_total{route=\"generate\",outcome=\"rejected\"}", TOO_LARGE + 2);
        assertScraped("sluice_requests_total{route=\"generate\",outcome=\"upstream_error\"}", 1);
        assertScraped("sluice_requests_total{route=\"chat_completions\",outcome=\"ok\"}", 2);
        assertScraped("sluice_requests_total{route=\"chat_completions\",outcome=\"client_disconnect\"}", 1);
        assertScraped("sluice_requests_total{route=\"completions\",outcome=\"ok\"}", 1);
    }

    @Test
    void theGatewaysOwnRoutesAreCountedToo() throws Exception {
        // the client listener's local routes are requests too (Prometheus scrapes the admin listener,
        // which is not counted: it is the operator's, not traffic)
        assertThat(bed.get("/health").statusCode()).isEqualTo(200);
        assertScrapedAtLeast("sluice_requests_total{route=\"health\",outcome=\"ok\"}", 1);
    }

    @Test
    void abortsAndUpstreamErrorsAreCountedByCause() throws Exception {
        assertScrapedAtLeast("sluice_aborts_total{cause=\"client_disconnect\"}", 1);
        assertScrapedAtLeast("sluice_aborts_total{cause=\"peer_failed\"}", 1);
        assertScrapedAtLeast("sum(sluice_abort_requests_sent_total{result=\"ok\"})", 1);
        assertScrapedAtLeast("sum(sluice_upstream_errors_total{role=\"prefill\",kind=\"status\"})", 1);
    }

    @Test
    void latencyHistogramsUseTheLlmBuckets() throws Exception {
        for (String h : List.of("sluice_time_to_first_token_seconds", "sluice_inter_token_latency_seconds",
                "sluice_request_duration_seconds", "sluice_queue_wait_seconds")) {
            assertScrapedAtLeast("sum(" + h + "_count)", 1);
            assertThat(result("count by (le) (" + h + "_bucket)")).as("buckets of %s", h).hasSize(17); // 16 + "+Inf"
            assertThat(result(h + "_bucket{le=\"0.005\"}")).as("%s has the 5 ms bucket", h).isNotEmpty();
            assertThat(result(h + "_bucket{le=\"300.0\"}")).as("%s has the 300 s bucket", h).isNotEmpty();
        }
        assertScrapedAtLeast("sluice_prompt_tokens_total", 1);
        assertScrapedAtLeast("sluice_completion_tokens_total", 1);
    }

    @Test
    void admissionGaugesAndLimitsAreExposed() throws Exception {
        assertScraped("sluice_admission_limit{limit=\"max_queued_requests\"}", 1);
        assertScraped("sluice_admission_limit{limit=\"max_pending_tokens\"}", 4000);
        assertScraped("sluice_admission_limit{limit=\"max_request_tokens\"}", 3500);
        assertScraped("sluice_admission_limit{limit=\"queue_timeout_seconds\"}", 20);
        assertScrapedAtLeast("count(sluice_admission_limit)", 7);
        assertScraped("count(sluice_queue_depth)", 3);
        assertScraped("sum(sluice_queue_depth)", 0);
        assertScraped("sluice_pending_prompt_tokens", 0);
        assertThat(result("sluice_prefill_inflight_tokens")).hasSize(1);
        assertThat(result("sluice_prefill_throughput_tokens_per_second")).hasSize(1);
    }

    @Test
    void workersAreUpWithFreshTelemetryAndTheirOwnSeriesAreScraped() throws Exception {
        String prefill = hostPort(bed.prefill().url());
        String decode = hostPort(bed.decode().url());
        assertScraped("sluice_worker_up{role=\"prefill\",worker=\"" + prefill + "\"}", 1);
        assertScraped("sluice_worker_up{role=\"decode\",worker=\"" + decode + "\"}", 1);
        assertScraped("count(sluice_worker_telemetry_up == 1)", 2);
        assertScrapedAtLeast("count(sluice_worker_telemetry_age_seconds < 30)", 2);
        for (String name : List.of("sluice_worker_queue_requests", "sluice_worker_running_requests",
                "sluice_worker_token_usage", "sluice_worker_used_tokens", "sluice_worker_max_total_tokens",
                "sluice_worker_transfer_failed")) {
            assertScraped("count(" + name + ")", 2);
        }
        // the workers' own series, scraped directly from them
        assertScraped("count(sglang:num_running_reqs)", 2);
        // the gateway's telemetry mirrors what the worker itself says
        assertScrapedAtLeast("sglang:max_total_num_tokens{role=\"decode\"}", 1);
        assertScraped("sluice_worker_max_total_tokens{role=\"decode\"}", value("sglang:max_total_num_tokens{role=\"decode\"}"));
        assertScrapedAtLeast("sum(sglang:time_to_first_token_seconds_count)", 1);
    }

    @Test
    void processMetricsAreExposed() throws Exception {
        for (String q : List.of("jvm_memory_used_bytes{area=\"heap\"}", "jvm_gc_pause_seconds_count",
                "sluice_netty_direct_memory_used_bytes", "sluice_netty_pooled_memory_bytes{type=\"direct\"}",
                "sluice_event_loop_pending_tasks", "sluice_client_connections", "sluice_upstream_connections")) {
            eventually(SCRAPED, () -> result(q).size() > 0);
            assertThat(result(q)).as(q).isNotEmpty();
        }
    }

    @Test
    void everyDashboardAndAlertExpressionIsValidPromQl() throws Exception {
        List<Query> queries = new ArrayList<>(ShippedQueries.dashboard());
        queries.addAll(ShippedQueries.alerts());
        assertThat(queries).hasSizeGreaterThan(40);
        List<String> failures = new ArrayList<>();
        for (Query q : queries) {
            JsonNode answer = prometheus.query(q.promql());
            if (!answer.path("status").asText().equals("success")) {
                failures.add(q + " -> " + answer.path("errorType").asText() + ": " + answer.path("error").asText());
            }
        }
        assertThat(failures).as("queries Prometheus refused").isEmpty();
    }

    @Test
    void everyAdmissionPanelReturnsData() throws Exception {
        List<Query> admission = ShippedQueries.dashboard().stream().filter(q -> q.row().equals("Admission")).toList();
        assertThat(admission).hasSizeGreaterThanOrEqualTo(4);
        // rates need two samples of a series inside the 1m window
        Map<String, Integer> sizes = new TreeMap<>();
        eventually(SCRAPED, () -> {
            sizes.clear();
            admission.forEach(q -> sizes.put(q.toString(), result(q.promql()).size()));
            return sizes.values().stream().allMatch(n -> n > 0);
        });
        assertThat(sizes).as("series returned by each Admission query").allSatisfy((q, n) -> assertThat(n).as(q).isPositive());
        assertThat(result("sum by (priority) (sluice_queue_depth)")).hasSize(3);
        assertThat(result("sum by (reason) (rate(sluice_rejections_total[1m]))"))
                .extracting(r -> r.path("metric").path("reason").asText())
                .contains("request_too_large", "token_budget_exceeded", "queue_full");
    }

    @Test
    void theAlertRulesLoadAndEvaluateWithoutError() throws Exception {
        List<String> names = ShippedQueries.alerts().stream().map(Query::source).toList();
        List<String> unhealthy = new ArrayList<>();
        eventually(SCRAPED, () -> {
            unhealthy.clear();
            try {
                JsonNode rules = prometheus.api("/api/v1/rules");
                List<String> loaded = new ArrayList<>();
                for (JsonNode g : rules.path("data").path("groups")) {
                    for (JsonNode r : g.path("rules")) {
                        loaded.add(r.path("name").asText());
                        if (!r.path("health").asText().equals("ok")) {
                            unhealthy.add(r.path("name").asText() + ": " + r.path("health").asText() + " "
                                    + r.path("lastError").asText());
                        }
                    }
                }
                if (!loaded.containsAll(names)) {
                    unhealthy.add("loaded " + loaded + ", expected " + names);
                }
            } catch (Exception e) {
                unhealthy.add(e.toString());
            }
            return unhealthy.isEmpty();
        });
        assertThat(unhealthy).as("rules not loaded or not evaluated cleanly\n%s", prometheus.logText()).isEmpty();
        // nothing is wrong in this cluster: no worker-down or KV-failure alert may fire
        JsonNode alerts = prometheus.api("/api/v1/alerts").path("data").path("alerts");
        assertThat(alerts.findValuesAsText("alertname"))
                .doesNotContain("SluiceWorkerDown", "SluiceKvTransferFailures", "SluiceGatewayDown");
    }
}
