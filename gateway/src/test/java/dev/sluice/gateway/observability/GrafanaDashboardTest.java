package dev.sluice.gateway.observability;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.observability.PrometheusBinaries.Result;
import dev.sluice.gateway.observability.ShippedQueries.Query;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shipped dashboard, its provisioning and the upload script, checked without a Grafana:
 * structure, one datasource variable used everywhere, the rows operators look for, and a
 * dashboard that always lands in its own folder. (Queries are run by PrometheusIntegrationTest and,
 * for the Node health and HiCache rows, GpuPanelsPrometheusTest; Grafana itself by
 * GrafanaContainersTest where Docker runs.)
 */
class GrafanaDashboardTest {
    private static final String DS = "${datasource}";

    @TempDir
    Path dir;

    @Test
    void theDashboardHasItsUidTitleSchemaAndADatasourceVariable() throws Exception {
        JsonNode d = ShippedQueries.dashboardJson();
        assertThat(d.path("uid").asText()).isEqualTo("sluice-overview");
        assertThat(d.path("title").asText()).isEqualTo("Sluice");
        assertThat(d.path("schemaVersion").asInt()).isBetween(36, 41);
        assertThat(d.path("id").isNull()).as("id null, so it imports into any Grafana").isTrue();
        JsonNode vars = d.path("templating").path("list");
        assertThat(vars).anySatisfy(v -> {
            assertThat(v.path("name").asText()).isEqualTo("datasource");
            assertThat(v.path("type").asText()).isEqualTo("datasource");
            assertThat(v.path("query").asText()).isEqualTo("prometheus");
        });
        for (JsonNode v : vars) {
            if (v.has("datasource")) {
                assertThat(v.path("datasource").path("uid").asText()).as("variable %s", v.path("name")).isEqualTo(DS);
            }
        }
    }

    @Test
    void everyPanelAndTargetQueriesThroughTheDatasourceVariable() throws Exception {
        List<String> problems = new ArrayList<>();
        Set<Integer> ids = new HashSet<>();
        for (JsonNode p : ShippedQueries.dashboardJson().path("panels")) {
            String title = p.path("title").asText();
            if (!ids.add(p.path("id").asInt())) {
                problems.add(title + ": duplicate id " + p.path("id"));
            }
            JsonNode pos = p.path("gridPos");
            if (pos.path("x").asInt() + pos.path("w").asInt() > 24 || pos.path("w").asInt() <= 0) {
                problems.add(title + ": gridPos outside the 24 columns " + pos);
            }
            if (p.path("type").asText().equals("row")) {
                continue;
            }
            if (!p.path("datasource").path("uid").asText().equals(DS)
                    || !p.path("datasource").path("type").asText().equals("prometheus")) {
                problems.add(title + ": panel datasource " + p.path("datasource"));
            }
            if (p.path("targets").isEmpty()) {
                problems.add(title + ": no targets");
            }
            if (p.path("description").asText().isBlank()) {
                problems.add(title + ": no description (the runbook refers to panels by what they show)");
            }
            for (JsonNode t : p.path("targets")) {
                if (!t.path("datasource").path("uid").asText().equals(DS)) {
                    problems.add(title + " [" + t.path("refId").asText() + "]: target datasource " + t.path("datasource"));
                }
            }
        }
        for (Query q : ShippedQueries.dashboard()) {
            if (q.written().isBlank()) {
                problems.add(q.source() + ": empty expr");
            }
            if (q.promql().contains("$")) {
                problems.add(q.source() + ": a template variable nobody defines: " + q.written());
            }
        }
        assertThat(problems).isEmpty();
    }

    @Test
    void theRowsAreThoseTheRunbookDescribes() throws Exception {
        List<String> rows = new ArrayList<>();
        for (JsonNode p : ShippedQueries.dashboardJson().path("panels")) {
            if (p.path("type").asText().equals("row")) {
                rows.add(p.path("title").asText());
            }
        }
        assertThat(rows).containsExactly("Admission", "Latency", "PD", "Workers", "Node health", "HiCache",
                "Gateway process");
        List<Query> queries = ShippedQueries.dashboard();
        assertThat(queries).filteredOn(q -> q.row().equals("Admission")).extracting(Query::written)
                .anySatisfy(e -> assertThat(e).contains("sluice_queue_depth"))
                .anySatisfy(e -> assertThat(e).contains("sluice_admission_limit{limit=\"max_queued_requests\""))
                .anySatisfy(e -> assertThat(e).contains("sluice_pending_prompt_tokens"))
                .anySatisfy(e -> assertThat(e).contains("sluice_admission_limit{limit=\"max_pending_tokens\""))
                .anySatisfy(e -> assertThat(e).contains("sluice_rejections_total"))
                .anySatisfy(e -> assertThat(e).contains("sluice_queue_wait_seconds_bucket"));
        assertThat(queries).filteredOn(q -> q.row().equals("Latency")).extracting(Query::written)
                .anySatisfy(e -> assertThat(e).contains("sluice_time_to_first_token_seconds_bucket"))
                .anySatisfy(e -> assertThat(e).contains("sluice_inter_token_latency_seconds_bucket"))
                .anySatisfy(e -> assertThat(e).contains("sluice_request_duration_seconds_bucket"));
        assertThat(queries).filteredOn(q -> q.row().equals("PD")).extracting(Query::written)
                .anySatisfy(e -> assertThat(e).contains("sluice_aborts_total"))
                .anySatisfy(e -> assertThat(e).contains("sluice_kv_transfer_failures_total"))
                .anySatisfy(e -> assertThat(e).contains("sluice_upstream_errors_total"))
                .anySatisfy(e -> assertThat(e).contains("sluice_abort_requests_sent_total"));
        assertThat(queries).filteredOn(q -> q.row().equals("Workers")).extracting(Query::written)
                .anySatisfy(e -> assertThat(e).contains("sluice_worker_up"))
                .anySatisfy(e -> assertThat(e).contains("sluice_worker_telemetry_age_seconds"))
                .anySatisfy(e -> assertThat(e).contains("sluice_worker_hicache_host_used_tokens"));
        // read from Prometheus's own scrapes of the workers and GPU exporters, not through a gateway
        assertThat(queries).filteredOn(q -> q.row().equals("Node health")).extracting(Query::written)
                .anySatisfy(e -> assertThat(e).contains("up{job=~").contains("sluice-gateway").contains("sglang-prefill"))
                .anySatisfy(e -> assertThat(e).contains("sglang:num_queue_reqs{role=\"prefill\"}"))
                .anySatisfy(e -> assertThat(e).contains("sglang:token_usage{role=\"decode\"}"))
                .anySatisfy(e -> assertThat(e).contains("DCGM_FI_DEV_FB_USED").doesNotContain("DCGM_FI_DEV_FB_FREE"))
                .anySatisfy(e -> assertThat(e).contains("DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE"))
                .anySatisfy(e -> assertThat(e).contains("DCGM_FI_DEV_GPU_UTIL"))
                .allSatisfy(e -> assertThat(e).doesNotContain("$instance"));
        assertThat(queries).filteredOn(q -> q.row().equals("HiCache")).extracting(Query::written)
                .anySatisfy(e -> assertThat(e).contains("sglang:hicache_host_used_tokens"))
                .anySatisfy(e -> assertThat(e).contains("sglang:hicache_host_total_tokens"))
                .anySatisfy(e -> assertThat(e).contains("sglang:cache_hit_rate"));
        assertThat(queries).filteredOn(q -> q.row().equals("Gateway process")).extracting(Query::written)
                .anySatisfy(e -> assertThat(e).contains("jvm_memory_used_bytes"))
                .anySatisfy(e -> assertThat(e).contains("jvm_gc_pause_seconds"))
                .anySatisfy(e -> assertThat(e).contains("sluice_netty_direct_memory_used_bytes"))
                .anySatisfy(e -> assertThat(e).contains("sluice_event_loop_pending_tasks"))
                .anySatisfy(e -> assertThat(e).contains("sluice_client_connections"));
    }

    @Test
    void theGpuPanelsArePerGpuAndTheNewRowsFillTheGridWithoutOverlap() throws Exception {
        for (Query q : ShippedQueries.dashboard()) {
            if (q.written().contains("DCGM_FI_")) {
                assertThat(q.written()).as(q.source()).contains("by (instance, gpu)");
            }
        }
        // no two panels share a cell of the 24-column grid (rows count as one line)
        Set<String> cells = new HashSet<>();
        List<String> overlaps = new ArrayList<>();
        for (JsonNode p : ShippedQueries.dashboardJson().path("panels")) {
            JsonNode pos = p.path("gridPos");
            for (int y = pos.path("y").asInt(); y < pos.path("y").asInt() + pos.path("h").asInt(); y++) {
                for (int x = pos.path("x").asInt(); x < pos.path("x").asInt() + pos.path("w").asInt(); x++) {
                    if (!cells.add(x + "," + y)) {
                        overlaps.add(p.path("title").asText() + " at " + x + "," + y);
                    }
                }
            }
        }
        assertThat(overlaps).isEmpty();
    }

    @Test
    void provisioningPutsTheDashboardInTheSluiceFolderOverAPrometheusDatasource() throws Exception {
        Path prov = ShippedFiles.grafanaProvisioning();
        JsonNode providers = ShippedQueries.YAML.readTree(prov.resolve("dashboards/sluice.yml").toFile()).path("providers");
        assertThat(providers).hasSize(1);
        JsonNode p = providers.get(0);
        assertThat(p.path("folder").asText()).isEqualTo("Sluice");
        assertThat(p.path("folderUid").asText()).isEqualTo("sluice");
        assertThat(p.path("type").asText()).isEqualTo("file");
        assertThat(p.path("options").path("path").asText()).isNotBlank();
        JsonNode ds = ShippedQueries.YAML.readTree(prov.resolve("datasources/prometheus.yml").toFile()).path("datasources");
        assertThat(ds).anySatisfy(d -> assertThat(d.path("type").asText()).isEqualTo("prometheus"));
        // exemplars: the Prometheus datasource opens an exemplar's trace_id in the provisioned trace datasource
        JsonNode prom = null;
        java.util.Set<String> uids = new java.util.HashSet<>();
        for (JsonNode d : ds) {
            uids.add(d.path("uid").asText());
            if (d.path("type").asText().equals("prometheus")) {
                prom = d;
            }
        }
        JsonNode link = prom.path("jsonData").path("exemplarTraceIdDestinations").get(0);
        assertThat(link.path("name").asText()).isEqualTo("trace_id");
        assertThat(uids).contains(link.path("datasourceUid").asText());
    }

    @Test
    void theLatencyPanelsShowExemplars() throws Exception {
        JsonNode d = ShippedQueries.JSON.readTree(ShippedFiles.dashboard().toFile());
        java.util.List<String> latency = new java.util.ArrayList<>();
        for (JsonNode t : d.findValues("targets")) {
            for (JsonNode q : t) {
                if (q.path("expr").asText().matches(".*sluice_(time_to_first_token|request_duration)_seconds_bucket.*")) {
                    latency.add(q.path("expr").asText());
                    assertThat(q.path("exemplar").asBoolean()).as("exemplars on %s", q.path("expr")).isTrue();
                }
            }
        }
        assertThat(latency).isNotEmpty();
    }

    @Test
    void theUploadScriptHasHelpAndRefusesTheGeneralFolderSayingWhy() throws Exception {
        Path script = ShippedFiles.root().resolve("scripts/grafana-upload");
        assertThat(script).isExecutable();
        Result help = PrometheusBinaries.run(dir, null, "bash", script.toString(), "--help");
        assertThat(help.exitCode()).as(help.output()).isZero();
        assertThat(help.output()).contains("GRAFANA_URL", "GRAFANA_TOKEN", "/api/dashboards/db", "General");

        Result general = PrometheusBinaries.run(dir, null, "env", "GRAFANA_URL=http://127.0.0.1:9",
                "GRAFANA_TOKEN=t", "bash", script.toString(), "--folder-uid", "");
        assertThat(general.exitCode()).isNotZero();
        assertThat(general.output()).contains("General", "invisible");
        for (String[] args : List.of(new String[] {"--folder-uid", "general"}, new String[] {"--folder-title", "General"})) {
            Result named = PrometheusBinaries.run(dir, null, "env", "GRAFANA_URL=http://127.0.0.1:9",
                    "GRAFANA_TOKEN=t", "bash", script.toString(), args[0], args[1]);
            assertThat(named.exitCode()).as(String.join(" ", args)).isNotZero();
            assertThat(named.output()).as(String.join(" ", args)).contains("refusing to upload into the General folder");
        }

        Result noUrl = PrometheusBinaries.run(dir, null, "env", "-u", "GRAFANA_URL", "bash", script.toString());
        assertThat(noUrl.exitCode()).isNotZero();
        assertThat(noUrl.output()).contains("GRAFANA_URL");
    }
}
