package dev.sluice.gateway.observability;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.observability.ShippedQueries.Query;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

/**
 * Grafana provisioned with the shipped files, over a Prometheus (shipped rules) that scrapes a
 * gateway and simulated workers running on the host. Needs a Docker engine: skipped without one.
 */
@Testcontainers(disabledWithoutDocker = true)
class GrafanaContainersTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String HOST = "host.testcontainers.internal";
    private static final String ADMIN = "admin:sluice-test";

    private static PdTestbed bed;
    private static Network network;
    private static GenericContainer<?> prometheus;
    private static GenericContainer<?> grafana;
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(SimConfig.defaults().withDecodeStep(Duration.ofMillis(1)),
                "{connect: 2s, first_token: 30s, idle_stream: 10s}");
        int prefill = URI.create(bed.prefill().url()).getPort();
        int decode = URI.create(bed.decode().url()).getPort();
        org.testcontainers.Testcontainers.exposeHostPorts(bed.port(), prefill, decode);
        network = Network.newNetwork();

        prometheus = new GenericContainer<>(DockerImageName.parse("prom/prometheus:v2.53.2"))
                .withNetwork(network).withNetworkAliases("prometheus")
                .withCopyToContainer(Transferable.of(scrapeConfig(bed.port(), prefill, decode)),
                        "/etc/prometheus/prometheus.yml")
                .withCopyFileToContainer(MountableFile.forHostPath(ShippedFiles.alerts()), "/etc/prometheus/alerts.yml")
                .withExposedPorts(9090)
                .waitingFor(Wait.forHttp("/-/ready").forStatusCode(200));
        prometheus.start();

        // the shipped provisioning; only the datasource URL differs: Prometheus is another container here
        String datasource = Files.readString(ShippedFiles.grafanaProvisioning().resolve("datasources/prometheus.yml"))
                .replace("url: http://localhost:9090", "url: http://prometheus:9090");
        grafana = new GenericContainer<>(DockerImageName.parse("grafana/grafana:11.3.0"))
                .withNetwork(network)
                .withEnv("GF_SECURITY_ADMIN_PASSWORD", ADMIN.substring(ADMIN.indexOf(':') + 1))
                .withCopyToContainer(Transferable.of(datasource), "/etc/grafana/provisioning/datasources/prometheus.yml")
                .withCopyFileToContainer(MountableFile.forHostPath(
                        ShippedFiles.grafanaProvisioning().resolve("dashboards/sluice.yml")),
                        "/etc/grafana/provisioning/dashboards/sluice.yml")
                .withCopyFileToContainer(MountableFile.forHostPath(ShippedFiles.dashboard()),
                        "/etc/grafana/dashboards/sluice/sluice.json")
                .withExposedPorts(3000)
                .waitingFor(Wait.forHttp("/api/health").forStatusCode(200));
        grafana.start();

        assertThat(bed.post("/generate", "{\"text\":\"hello\"}").statusCode()).isEqualTo(200);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (grafana != null) {
                grafana.stop();
            }
            if (prometheus != null) {
                prometheus.stop();
            }
            if (network != null) {
                network.close();
            }
        } finally {
            if (bed != null) {
                bed.close();
            }
        }
    }

    private static String scrapeConfig(int gateway, int prefill, int decode) throws IOException {
        ObjectNode config = (ObjectNode) ShippedQueries.YAML.readTree(ShippedFiles.prometheusConfig().toFile());
        ((ObjectNode) config.path("global")).put("scrape_interval", "1s").put("evaluation_interval", "1s");
        Map<String, Integer> ports = Map.of("sluice-gateway", gateway, "sglang-prefill", prefill, "sglang-decode", decode);
        for (JsonNode job : config.path("scrape_configs")) {
            ((ObjectNode) job).put("scrape_interval", "1s");
            for (JsonNode sc : job.path("static_configs")) {
                ArrayNode t = ((ObjectNode) sc).putArray("targets");
                t.add(HOST + ":" + ports.get(job.path("job_name").asText()));
            }
        }
        return ShippedQueries.YAML.writeValueAsString(config);
    }

    private static HttpRequest.Builder grafanaRequest(String path) {
        return HttpRequest.newBuilder(URI.create("http://" + grafana.getHost() + ":" + grafana.getMappedPort(3000) + path))
                .timeout(Duration.ofSeconds(10))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(ADMIN.getBytes(StandardCharsets.UTF_8)))
                .header("Accept", "application/json");
    }

    private static JsonNode grafanaGet(String path) throws IOException, InterruptedException {
        return JSON.readTree(HTTP.send(grafanaRequest(path).GET().build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    @Test
    void theDashboardIsProvisionedIntoTheSluiceFolder() throws Exception {
        AtomicReference<JsonNode> found = new AtomicReference<>();
        eventually(Duration.ofSeconds(30), () -> {
            try {
                for (JsonNode hit : grafanaGet("/api/search?type=dash-db&query=Sluice")) {
                    if (hit.path("uid").asText().equals("sluice-overview")) {
                        found.set(hit);
                    }
                }
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return found.get() != null;
        });
        assertThat(found.get()).as("dashboard sluice-overview provisioned").isNotNull();
        assertThat(found.get().path("folderTitle").asText()).isEqualTo("Sluice");
        assertThat(found.get().path("folderUid").asText()).isEqualTo("sluice");
        JsonNode dashboard = grafanaGet("/api/dashboards/uid/sluice-overview");
        assertThat(dashboard.path("meta").path("folderTitle").asText()).isEqualTo("Sluice");
        assertThat(dashboard.path("dashboard").path("title").asText()).isEqualTo("Sluice");
    }

    @Test
    void anAdmissionPanelsQueryReturnsDataThroughGrafana() throws Exception {
        Query panel = ShippedQueries.dashboard().stream()
                .filter(q -> q.row().equals("Admission") && q.written().contains("sluice_queue_depth"))
                .findFirst().orElseThrow();
        ObjectNode body = JSON.createObjectNode().put("from", "now-5m").put("to", "now");
        ObjectNode q = body.putArray("queries").addObject();
        q.put("refId", "A").put("expr", panel.promql()).put("instant", true).put("range", false)
                .put("intervalMs", 1000).put("maxDataPoints", 100);
        q.putObject("datasource").put("type", "prometheus").put("uid", "prometheus");
        AtomicReference<JsonNode> answer = new AtomicReference<>();
        boolean hasData = eventually(Duration.ofSeconds(60), () -> {
            try {
                HttpResponse<String> res = HTTP.send(grafanaRequest("/api/ds/query")
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
                        HttpResponse.BodyHandlers.ofString());
                answer.set(JSON.readTree(res.body()));
                JsonNode frames = answer.get().path("results").path("A").path("frames");
                return res.statusCode() == 200 && frames.size() > 0
                        && frames.get(0).path("data").path("values").size() > 0
                        && frames.get(0).path("data").path("values").get(0).size() > 0;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        });
        assertThat(hasData).as("%s through Grafana: %s", panel, answer.get()).isTrue();
        assertThat(List.of(answer.get().path("results").path("A").path("error").asText())).containsExactly("");
    }
}
