package dev.sluice.gateway.observability;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import dev.sluice.gateway.observability.PrometheusBinaries.Result;
import dev.sluice.gateway.observability.ShippedQueries.Query;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard's Node health and HiCache rows against a real Prometheus, configured with the
 * shipped prometheus.yml (intervals shortened, targets pointed here), scraping: a real gateway with
 * simulated SGLang workers, simulated vLLM workers (for the panels' vLLM alternatives), and two
 * FAKE GPU sources, since no GPU exists on the machines that run this test:
 * <ul>
 *   <li>job dcgm-exporter: {@link #FAKE_DCGM}, a hand-written exposition in the format of NVIDIA's
 *       dcgm-exporter (its metric and label names), for two GPUs of a host "gpu-host-a";</li>
 *   <li>job node-exporter: the output of the shipped scripts/gpu-textfile for a FAKE nvidia-smi
 *       ({@link #FAKE_NVIDIA_SMI}, two GPUs of "gpu-host-b"), as node_exporter's textfile collector
 *       would serve it.</li>
 * </ul>
 * Every query of those two rows must return data, from every source it is written for.
 */
@DisabledIfSystemProperty(named = PrometheusBinaries.SKIP_PROPERTY, matches = "true",
        disabledReason = "-Dsluice.skipPrometheus=true: skipped; without it these tests need /usr/bin/prometheus"
                + " and /usr/bin/promtool, which `bash .ci/run` installs")
class GpuPanelsPrometheusTest {
    private static final Duration SCRAPED = Duration.ofSeconds(30);

    /** FAKE: what dcgm-exporter (3.x/4.x) serves for two H100s. No GPU was read to write this. */
    static final String FAKE_DCGM = """
            # FAKE dcgm-exporter exposition written by GpuPanelsPrometheusTest: no GPU exists here.
            # HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
            # TYPE DCGM_FI_DEV_GPU_UTIL gauge
            DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-00000000-fake-0000-0000-00000000000a",pci_bus_id="00000000:17:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-host-a"} 93
            DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-00000000-fake-0000-0000-00000000000b",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-host-a"} 0
            # HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
            # TYPE DCGM_FI_DEV_FB_FREE gauge
            DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-00000000-fake-0000-0000-00000000000a",pci_bus_id="00000000:17:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-host-a"} 11559
            DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-00000000-fake-0000-0000-00000000000b",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-host-a"} 81047
            # HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
            # TYPE DCGM_FI_DEV_FB_USED gauge
            DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-00000000-fake-0000-0000-00000000000a",pci_bus_id="00000000:17:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-host-a"} 70000
            DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-00000000-fake-0000-0000-00000000000b",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-host-a"} 512
            """;

    /**
     * FAKE nvidia-smi: prints what {@code nvidia-smi --query-gpu=... --format=csv,noheader,nounits}
     * prints on a host with two GPUs, one of them without a power reading.
     */
    static final String FAKE_NVIDIA_SMI = """
            #!/bin/sh
            # FAKE nvidia-smi written by GpuPanelsPrometheusTest: no GPU exists here.
            cat <<'CSV'
            0, GPU-00000000-fake-0000-0000-0000000000b0, NVIDIA A100-SXM4-80GB, 00000000:07:00.0, 60000, 21920, 75, 30, 61, 250.50
            1, GPU-00000000-fake-0000-0000-0000000000b1, NVIDIA A100-SXM4-80GB, 00000000:0B:00.0, 1024, 80896, 5, 1, 35, [N/A]
            CSV
            """;

    @TempDir
    static Path dir;
    private static PdTestbed bed;
    private static SimCluster vllm;
    private static HttpServer dcgm;
    private static HttpServer nodeExporter;
    private static PrometheusServer prometheus;

    @BeforeAll
    static void start() throws Exception {
        Path binary = PrometheusBinaries.require("prometheus");
        bed = PdTestbed.start(SimConfig.defaults().withDecodeStep(Duration.ofMillis(5)).withDefaultMaxTokens(4),
                "{connect: 2s, first_token: 30s, idle_stream: 10s}");
        vllm = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false), SimMode.VLLM);
        dcgm = serve(FAKE_DCGM);
        nodeExporter = serve(gpuTextfile());
        // one request through the gateway, so the workers' counters and the gateway's are not all zero
        assertThat(bed.post("/generate", "{\"text\":\"hello\"}").statusCode()).isEqualTo(200);
        Files.copy(ShippedFiles.alerts(), dir.resolve("alerts.yml"));
        Files.writeString(dir.resolve("prometheus.yml"), scrapeConfig());
        prometheus = PrometheusServer.start(binary, dir);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (prometheus != null) {
                prometheus.close();
            }
        } finally {
            for (HttpServer s : new HttpServer[] {dcgm, nodeExporter}) {
                if (s != null) {
                    s.stop(0);
                }
            }
            if (vllm != null) {
                vllm.close();
            }
            if (bed != null) {
                bed.close();
            }
        }
    }

    /** scripts/gpu-textfile's output for {@link #FAKE_NVIDIA_SMI}. */
    private static String gpuTextfile() throws Exception {
        Path smi = dir.resolve("nvidia-smi");
        Files.writeString(smi, FAKE_NVIDIA_SMI);
        Files.setPosixFilePermissions(smi, PosixFilePermissions.fromString("rwxr-xr-x"));
        Result r = PrometheusBinaries.run(dir, null, "env", "NVIDIA_SMI=" + smi, "GPU_TEXTFILE_HOSTNAME=gpu-host-b",
                "bash", ShippedFiles.root().resolve("scripts/gpu-textfile").toString(), "--stdout");
        assertThat(r.exitCode()).as(r.output()).isZero();
        assertThat(r.output()).contains("DCGM_FI_DEV_FB_USED{gpu=\"1\"", "sluice_gpu_textfile_up{Hostname=\"gpu-host-b\"} 1");
        return r.output();
    }

    /** A loopback HTTP server answering GET /metrics with {@code body} (Prometheus text format). */
    private static HttpServer serve(String body) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        s.createContext("/metrics", ex -> {
            ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            ex.sendResponseHeaders(200, bytes.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(bytes);
            }
        });
        s.start();
        return s;
    }

    private static String hostPort(HttpServer s) {
        return "127.0.0.1:" + s.getAddress().getPort();
    }

    private static String hostPort(String url) {
        URI u = URI.create(url);
        return u.getHost() + ":" + u.getPort();
    }

    private static final Map<String, List<String>> TARGETS = new TreeMap<>();

    /**
     * The shipped prometheus.yml with every interval at 1 s and its targets pointed here: both
     * simulated clusters under the worker jobs (their role labels kept), the fakes under the GPU jobs.
     */
    private static String scrapeConfig() throws IOException {
        TARGETS.put("sluice-gateway", List.of("127.0.0.1:" + bed.gateway.adminPort())); // as shipped: the admin listener
        TARGETS.put("sglang-prefill", List.of(hostPort(bed.prefill().url()), hostPort(vllm.prefillWorkers().get(0).url())));
        TARGETS.put("sglang-decode", List.of(hostPort(bed.decode().url()), hostPort(vllm.decodeWorkers().get(0).url())));
        TARGETS.put("dcgm-exporter", List.of(hostPort(dcgm)));
        TARGETS.put("node-exporter", List.of(hostPort(nodeExporter)));
        ObjectNode config = (ObjectNode) ShippedQueries.YAML.readTree(ShippedFiles.prometheusConfig().toFile());
        ((ObjectNode) config.path("global")).put("scrape_interval", "1s").put("evaluation_interval", "1s");
        Set<String> jobs = new TreeSet<>();
        for (JsonNode job : config.path("scrape_configs")) {
            String name = job.path("job_name").asText();
            jobs.add(name);
            assertThat(TARGETS).as("shipped job %s has a target in this test", name).containsKey(name);
            ((ObjectNode) job).put("scrape_interval", "1s");
            assertThat(job.path("static_configs")).as("job %s", name).hasSize(1);
            ArrayNode t = ((ObjectNode) job.path("static_configs").get(0)).putArray("targets");
            TARGETS.get(name).forEach(t::add);
        }
        assertThat(jobs).containsAll(List.of("dcgm-exporter", "node-exporter"));
        return ShippedQueries.YAML.writeValueAsString(config);
    }

    private static JsonNode result(String promql) {
        return prometheus.result(promql);
    }

    /** The instances (scrape targets) of the series {@code promql} returns. */
    private static Set<String> instances(String promql) {
        Set<String> out = new TreeSet<>();
        result(promql).forEach(r -> out.add(r.path("metric").path("instance").asText()));
        return out;
    }

    private static List<Query> rows(String... names) throws IOException {
        List<String> wanted = List.of(names);
        return ShippedQueries.dashboard().stream().filter(q -> wanted.contains(q.row())).toList();
    }

    /** The dashboard query of panel {@code title}, target {@code refId}. */
    private static String panel(String title, String refId) throws IOException {
        String source = title + " [" + refId + "]";
        return ShippedQueries.dashboard().stream().filter(q -> q.source().equals(source)).findFirst()
                .orElseThrow(() -> new AssertionError("no dashboard query " + source)).promql();
    }

    private static void awaitEveryTargetUp() throws InterruptedException {
        int targets = TARGETS.values().stream().mapToInt(List::size).sum();
        eventually(SCRAPED, () -> result("count(up == 1)").size() == 1
                && Double.parseDouble(result("count(up == 1)").get(0).path("value").get(1).asText()) == targets);
    }

    @Test
    void everyTargetOfEveryShippedJobIsUp() throws Exception {
        awaitEveryTargetUp();
        for (Map.Entry<String, List<String>> job : TARGETS.entrySet()) {
            assertThat(instances("up{job=\"" + job.getKey() + "\"} == 1")).as("job %s", job.getKey())
                    .containsExactlyInAnyOrderElementsOf(job.getValue());
        }
    }

    @Test
    void everyNodeHealthAndHiCacheQueryReturnsData() throws Exception {
        List<Query> queries = rows("Node health", "HiCache");
        assertThat(queries).extracting(Query::row).contains("Node health", "HiCache");
        assertThat(queries).hasSizeGreaterThanOrEqualTo(10);
        awaitEveryTargetUp();
        Map<String, Integer> sizes = new TreeMap<>();
        eventually(SCRAPED, () -> {
            sizes.clear();
            queries.forEach(q -> sizes.put(q.toString(), result(q.promql()).size()));
            return sizes.values().stream().allMatch(n -> n > 0);
        });
        assertThat(sizes).as("series returned by each Node health / HiCache query")
                .allSatisfy((q, n) -> assertThat(n).as(q).isPositive());
    }

    @Test
    void servicesUpShowsTheGatewayTheWorkersAndTheGpuExporters() throws Exception {
        awaitEveryTargetUp();
        Set<String> jobs = new TreeSet<>();
        for (String ref : List.of("A", "B")) {
            result(panel("Services up", ref)).forEach(r -> {
                jobs.add(r.path("metric").path("job").asText());
                assertThat(r.path("value").get(1).asText()).as("%s", r).isEqualTo("1");
            });
        }
        assertThat(jobs).isEqualTo(TARGETS.keySet());
    }

    @Test
    void gpuPanelsShowEveryGpuOfBothSourcesWithTheirValues() throws Exception {
        awaitEveryTargetUp();
        String a = hostPort(dcgm);
        String b = hostPort(nodeExporter);
        Map<String, Double> used = byInstanceAndGpu(panel("GPU memory used / total", "A"));
        Map<String, Double> total = byInstanceAndGpu(panel("GPU memory used / total", "B"));
        Map<String, Double> util = byInstanceAndGpu(panel("GPU utilisation", "A"));
        assertThat(used).containsExactlyInAnyOrderEntriesOf(Map.of(a + "/0", 70000.0, a + "/1", 512.0,
                b + "/0", 60000.0, b + "/1", 1024.0));
        assertThat(total).containsExactlyInAnyOrderEntriesOf(Map.of(a + "/0", 81559.0, a + "/1", 81559.0,
                b + "/0", 81920.0, b + "/1", 81920.0));
        assertThat(util).containsExactlyInAnyOrderEntriesOf(Map.of(a + "/0", 93.0, a + "/1", 0.0,
                b + "/0", 75.0, b + "/1", 5.0));
    }

    private static Map<String, Double> byInstanceAndGpu(String promql) {
        Map<String, Double> out = new TreeMap<>();
        for (JsonNode r : result(promql)) {
            out.put(r.path("metric").path("instance").asText() + "/" + r.path("metric").path("gpu").asText(),
                    Double.parseDouble(r.path("value").get(1).asText()));
        }
        return out;
    }

    @Test
    void workerPanelsReadSglangAndVllmWorkersDirectly() throws Exception {
        awaitEveryTargetUp();
        String sglangPrefill = hostPort(bed.prefill().url());
        String vllmPrefill = hostPort(vllm.prefillWorkers().get(0).url());
        String sglangDecode = hostPort(bed.decode().url());
        String vllmDecode = hostPort(vllm.decodeWorkers().get(0).url());
        assertThat(instances(panel("Prefill queue depth (workers' own)", "A")))
                .containsExactlyInAnyOrder(sglangPrefill, vllmPrefill);
        assertThat(instances(panel("Prefill queue depth (workers' own)", "B"))).containsExactly(sglangPrefill);
        assertThat(instances(panel("Prefill queue depth (workers' own)", "C"))).containsExactly(sglangPrefill);
        assertThat(instances(panel("Decode KV cache usage (workers' own)", "A")))
                .containsExactlyInAnyOrder(sglangDecode, vllmDecode);
        // HiCache and SGLang's hit rate: the prefill's own figures (the simulator reports HiCache as 0 of 0)
        assertThat(instances(panel("HiCache host tokens used / capacity", "A"))).contains(sglangPrefill);
        assertThat(instances(panel("HiCache host tokens used / capacity", "B"))).contains(sglangPrefill);
        assertThat(instances(panel("Prefix cache hit rate (workers' own)", "A"))).containsExactly(sglangPrefill);
    }
}
