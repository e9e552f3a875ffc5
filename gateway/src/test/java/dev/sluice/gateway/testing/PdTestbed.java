package dev.sluice.gateway.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A real gateway in front of a real simulated PD cluster, all on loopback ports chosen by the OS.
 * {@link #close} checks that the gateway's accounting is back to zero and the workers are idle.
 */
public final class PdTestbed implements AutoCloseable {
    public final SimCluster cluster;
    public final GatewayServer gateway;
    public final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    /** The gateway's configuration as YAML (tests of reload write it to a file and edit it). */
    public String yaml;

    /** A testbed of a cluster and a gateway the test built itself (its own YAML), with the same checks at close. */
    public static PdTestbed adopt(SimCluster cluster, GatewayServer gateway) {
        return new PdTestbed(cluster, gateway);
    }

    private PdTestbed(SimCluster cluster, GatewayServer gateway) {
        this.cluster = cluster;
        this.gateway = gateway;
    }

    public static PdTestbed start(SimConfig sim, String timeoutsYaml) throws Exception {
        return start(1, 1, sim, timeoutsYaml, "");
    }

    public static PdTestbed start(int prefills, int decodes, SimConfig sim, String timeoutsYaml, String extraYaml)
            throws Exception {
        return start(SimMode.SGLANG, prefills, decodes, sim, timeoutsYaml, extraYaml);
    }

    /**
     * A gateway in the disaggregation mode matching {@code mode} (sglang, vllm, or none for unified
     * servers, {@code decodes} of them) in front of that simulated cluster.
     */
    public static PdTestbed start(SimMode mode, int prefills, int decodes, SimConfig sim, String timeoutsYaml,
                                  String extraYaml) throws Exception {
        // a real SGLang's /health is a one-token generation answered after >= 1 s by default; the tests' 500 ms
        // checks run the servers as SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0 (an instant /health, a real mode;
        // /health_generate still generates). startAsIs keeps the servers' defaults.
        return startAsIs(mode, prefills, decodes, sim.withHealthGeneration(false), timeoutsYaml, extraYaml);
    }

    /** As {@link #start(SimMode, int, int, SimConfig, String, String)}, the configuration read with {@code overrides}. */
    public static PdTestbed start(SimMode mode, int prefills, int decodes, SimConfig sim, String timeoutsYaml,
                                  String extraYaml, ConfigOverrides overrides) throws Exception {
        return startAsIs(mode, prefills, decodes, sim.withHealthGeneration(false), timeoutsYaml, extraYaml, overrides);
    }

    /** As {@link #start(SimMode, int, int, SimConfig, String, String)}, with the servers exactly as {@code sim} says. */
    public static PdTestbed startAsIs(SimMode mode, int prefills, int decodes, SimConfig sim, String timeoutsYaml,
                                      String extraYaml) throws Exception {
        return startAsIs(mode, prefills, decodes, sim, timeoutsYaml, extraYaml, ConfigOverrides.none());
    }

    /**
     * A gateway with {@code disaggregation: none} in front of {@code servers} simulated vLLM servers (vLLM-mode
     * prefill servers, which serve a request without {@code kv_transfer_params} whole, as any {@code vllm serve}).
     */
    public static PdTestbed startVllmUnified(int servers, SimConfig sim, String timeoutsYaml, String extraYaml)
            throws Exception {
        return startAsIs(SimMode.VLLM, servers, 0, sim.withHealthGeneration(false), timeoutsYaml, extraYaml,
                ConfigOverrides.none(), true);
    }

    private static PdTestbed startAsIs(SimMode mode, int prefills, int decodes, SimConfig sim, String timeoutsYaml,
                                       String extraYaml, ConfigOverrides overrides) throws Exception {
        return startAsIs(mode, prefills, decodes, sim, timeoutsYaml, extraYaml, overrides, false);
    }

    private static PdTestbed startAsIs(SimMode mode, int prefills, int decodes, SimConfig sim, String timeoutsYaml,
                                       String extraYaml, ConfigOverrides overrides, boolean vllmUnified)
            throws Exception {
        SimCluster cluster = SimCluster.start(prefills, decodes, 0, sim, mode);
        // the tests read /metrics and the per-worker /readiness from the client port (off by default:
        // ClientListenerExposureEndToEndTest covers the default)
        StringBuilder yaml = new StringBuilder(hasSection(extraYaml, "listen") ? ""
                : "listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\n");
        switch (vllmUnified ? SimMode.UNIFIED : mode) {
            case SGLANG -> {
                yaml.append("disaggregation: sglang\nworkers:\n  prefill:\n");
                for (PrefillServer p : cluster.prefills()) {
                    yaml.append("    - url: ").append(p.url()).append("\n      bootstrap_port: ")
                            .append(p.bootstrapPort()).append('\n');
                }
                yaml.append("  decode:\n");
                for (DecodeServer d : cluster.decodes()) {
                    yaml.append("    - url: ").append(d.url()).append('\n');
                }
            }
            case VLLM -> {
                yaml.append("disaggregation: vllm\nworkers:\n  prefill:\n");
                cluster.prefillWorkers().forEach(p -> yaml.append("    - url: ").append(p.url()).append('\n'));
                yaml.append("  decode:\n");
                cluster.decodeWorkers().forEach(d -> yaml.append("    - url: ").append(d.url()).append('\n'));
            }
            case UNIFIED -> {
                yaml.append("disaggregation: none\nworkers:\n  unified:\n");
                (vllmUnified ? cluster.prefillWorkers() : cluster.decodeWorkers())
                        .forEach(d -> yaml.append("    - url: ").append(d.url()).append('\n'));
            }
            default -> throw new IllegalArgumentException(String.valueOf(mode));
        }
        // a section the test gives replaces the default one (a key written twice is a config error)
        yaml.append("timeouts: ").append(timeoutsYaml).append('\n')
                .append(hasSection(extraYaml, "health") ? "" : "health: {interval: 200ms, timeout: 500ms}\n")
                .append(hasSection(extraYaml, "telemetry") ? "" : "telemetry: {interval: 200ms}\n")
                .append(hasSection(extraYaml, "admin") ? "" : "admin: {port: 0}\n")
                // the tests written before routing policies existed count on round robin
                .append(hasSection(extraYaml, "routing") ? "" : "routing: {prefill: {policy: round_robin}, decode: "
                        + "{policy: round_robin}}\n")
                .append(extraYaml);
        GatewayServer gateway;
        try {
            gateway = new GatewayServer(ConfigLoader.parse(yaml.toString(), "test", withoutCalibration(extraYaml,
                    overrides))).start();
        } catch (Exception | Error e) {
            cluster.close();
            throw e;
        }
        PdTestbed bed = new PdTestbed(cluster, gateway);
        bed.yaml = yaml.toString();
        if (!gateway.awaitReady(20, TimeUnit.SECONDS)) {
            bed.close();
            throw new IllegalStateException("gateway never saw its workers healthy");
        }
        return bed;
    }

    private static boolean hasSection(String yaml, String key) {
        return yaml.startsWith(key + ":") || yaml.contains("\n" + key + ":");
    }

    public PrefillServer prefill() {
        return cluster.prefills().get(0);
    }

    public DecodeServer decode() {
        return cluster.decodes().get(0);
    }

    public int port() {
        return gateway.port();
    }

    public URI uri(String path) {
        return URI.create("http://127.0.0.1:" + gateway.port() + path);
    }

    public HttpResponse<String> post(String path, String json) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A JSON POST to {@code uri}, for {@code http.sendAsync}. */
    public static HttpRequest postRequest(URI uri, String json) {
        return HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build();
    }

    public HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    public String metrics() throws IOException, InterruptedException {
        return get("/metrics").body();
    }

    /**
     * The value of one sample line of the gateway's /metrics, or 0 when absent. Labels in
     * alphabetical order, e.g. {@code sluice_requests_total{outcome="ok",route="generate"}}.
     */
    public double metric(String nameWithLabels) throws IOException, InterruptedException {
        for (String raw : metrics().split("\n")) {
            // the simpleclient format writes a trailing comma; the pool label (one pool here) is left out
            String line = withoutPool(raw).replace(",}", "}");
            if (line.startsWith(nameWithLabels + " ")) {
                return Double.parseDouble(line.substring(nameWithLabels.length() + 1).trim());
            }
        }
        return 0;
    }

    /** A sample line without its {@code pool="..."} label (every series of a one-pool gateway has the same). */
    public static String withoutPool(String line) {
        return line.replaceFirst("pool=\"[^\"]*\",?", "").replace(",}", "}").replace("{}", "");
    }

    /**
     * Every sample of the gateway's /metrics whose line starts with {@code prefix} (say
     * {@code "sluice_kv_index_blocks{"}: one per worker), in order. Unchecked, for use in conditions.
     */
    public java.util.List<Double> samples(String prefix) {
        java.util.List<Double> out = new java.util.ArrayList<>();
        try {
            for (String raw : metrics().split("\n")) {
                String line = withoutPool(raw);
                if (line.startsWith(prefix)) {
                    out.add(Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)));
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        return out;
    }

    /**
     * The tests written before the prefill rates' calibration existed count each request a worker sees and
     * watch a gateway with no rate: their gateways run with {@code calibration.on_start: never}. A test whose
     * YAML names {@code calibration} gets what it names (PrefillCalibrationEndToEndTest runs the default).
     */
    public static ConfigOverrides withoutCalibration(String yaml, ConfigOverrides overrides) {
        // with pools: a top-level admission key laid over the file changes what the pools show of their limits
        // (AdminStatusPagePoolsBrowserTest read "-" for a pool's max_pending_tokens): those run the default
        return yaml.contains("calibration") || yaml.contains("pools:") ? overrides
                : overrides.withSet("admission.prefill_rate.calibration.on_start=never");
    }

    /** A gateway from {@code yaml}, started, once it sees its workers healthy (closed, and an error, if never). */
    public static GatewayServer startGateway(String yaml) throws Exception {
        GatewayServer g = new GatewayServer(ConfigLoader.parse(yaml, "test", withoutCalibration(yaml,
                ConfigOverrides.none()))).start();
        if (!g.awaitReady(20, TimeUnit.SECONDS)) {
            g.close();
            throw new IllegalStateException("gateway never saw its workers healthy");
        }
        return g;
    }

    /** The entries of {@code routing.kv_events.endpoints} (at its indentation) for these prefills' publishers. */
    public static String kvEventEndpoints(java.util.List<? extends SimWorker> prefills) {
        return kvEventEndpointLines(prefills);
    }

    /**
     * {@link #sglangYaml}'s head for the pair of {@code cluster} in its own protocol: SGLang's (with the
     * prefills' bootstrap ports) or vLLM's ({@code disaggregation: vllm}, the handoff in the bodies).
     */
    public static String pairYaml(SimMode mode, SimCluster cluster, String timeouts) {
        if (mode == SimMode.SGLANG) {
            return sglangYaml(cluster.prefills(), cluster.decodes(), timeouts);
        }
        if (mode != SimMode.VLLM) {
            throw new IllegalArgumentException("a PD pair is SGLang's or vLLM's: " + mode);
        }
        StringBuilder y = new StringBuilder("listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\n"
                + "disaggregation: vllm\nworkers:\n  prefill:\n");
        cluster.prefillWorkers().forEach(p -> y.append("    - url: ").append(p.url()).append('\n'));
        y.append("  decode:\n");
        cluster.decodeWorkers().forEach(d -> y.append("    - url: ").append(d.url()).append('\n'));
        return y.append(yamlTail(timeouts)).toString();
    }

    private static String yamlTail(String timeouts) {
        return "timeouts: " + timeouts + "\nhealth: {interval: 200ms, timeout: 500ms}\ntelemetry: {interval: 200ms}\n"
                + "admin: {port: 0}\n";
    }

    /**
     * The head of a gateway file for an SGLang pair of these servers, as the KV event tests use it:
     * loopback on port 0 with the internal endpoints, the workers, {@code timeouts}, fast health and
     * telemetry, an admin port; the test appends its {@code routing} (and anything else).
     */
    public static String sglangYaml(java.util.List<PrefillServer> prefills, java.util.List<DecodeServer> decodes,
                                    String timeouts) {
        StringBuilder y = new StringBuilder("listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\n"
                + "disaggregation: sglang\nworkers:\n  prefill:\n");
        for (PrefillServer p : prefills) {
            y.append("    - url: ").append(p.url()).append("\n      bootstrap_port: ").append(p.bootstrapPort())
                    .append('\n');
        }
        y.append("  decode:\n");
        for (DecodeServer d : decodes) {
            y.append("    - url: ").append(d.url()).append('\n');
        }
        return y.append(yamlTail(timeouts)).toString();
    }

    private static String kvEventEndpointLines(java.util.List<? extends SimWorker> prefills) {
        StringBuilder y = new StringBuilder();
        for (SimWorker p : prefills) {
            y.append("      \"").append(p.url()).append("\": \"").append(p.kvEventsEndpoint().orElseThrow())
                    .append("\"\n");
        }
        return y.toString();
    }

    /**
     * ZMQ PUB drops what it sends before a subscription has arrived: flushes the prefills' caches
     * (each flush publishes an AllBlocksCleared) until {@code heard} holds, for up to 30 s.
     */
    public static void awaitSubscribed(HttpClient http, java.util.List<? extends SimWorker> prefills,
            BooleanSupplier heard) throws Exception {
        awaitSubscribed(http, prefills, heard, java.util.List.of());
    }

    /**
     * {@link #awaitSubscribed(HttpClient, java.util.List, BooleanSupplier)}, and when it gives up the
     * failure names what each of {@code beds} saw of its event streams (up, age, gaps, malformed,
     * resubscribes per worker and rank), so that a failure on a loaded machine says which stream was silent.
     */
    public static void awaitSubscribed(HttpClient http, java.util.List<? extends SimWorker> prefills,
            BooleanSupplier heard, java.util.List<PdTestbed> beds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            for (SimWorker p : prefills) {
                // SGLang's POST /flush_cache; vLLM's is POST /reset_prefix_cache (an SGLang server has no such route)
                HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create(p.url() + "/flush_cache"))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 404) {
                    http.send(HttpRequest.newBuilder(URI.create(p.url() + "/reset_prefix_cache"))
                            .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding());
                }
            }
            if (eventually(Duration.ofMillis(300), heard)) {
                return;
            }
        }
        throw new AssertionError("the gateway(s) never heard every prefill's events" + SubscriptionReport.of(beds));
    }

    /** Polls {@code condition} until it holds or {@code timeout} passes; the test's only way to wait. */
    public static boolean eventually(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        return dev.sluice.testbed.testing.Poll.eventually(timeout, condition);
    }

    /**
     * Every request has ended: the gateway's queue, pending tokens, windows and in-flight counts
     * are back to zero, and no simulated worker holds anything.
     */
    public void assertQuiescent() throws InterruptedException {
        boolean idle = eventually(Duration.ofSeconds(10), () ->
                gateway.workers().all().stream().allMatch(w -> w.inflight() == 0));
        assertThat(idle).as("gateway in-flight counts back to zero: %s",
                gateway.workers().all().stream().map(w -> w.name() + "=" + w.inflight()).toList()).isTrue();
        // no second per-worker read here: the gateway's own stall probe (health.stall_panic) may start right after
        // the moment above and count on its pair for a few ms (a CI run read prefill=1 that way after heal)
        assertThat(eventually(Duration.ofSeconds(10), () -> gateway.admission().snapshot().idle()
                && gateway.liveRequests() == 0))
                .as("admission back to zero (queue, pending tokens, windows): %s, live requests %d",
                        gateway.admission().snapshot(), gateway.liveRequests()).isTrue();
        for (SimWorker w : cluster.workers()) {
            assertThat(w.awaitIdle(Duration.ofSeconds(10))).as("%s idle", w).isTrue();
        }
    }

    /** Turns every fault off, restarts killed workers, then {@link #close}s (which checks everything is back to zero). */
    public void healAndClose() throws Exception {
        for (SimWorker w : cluster.workers()) {
            w.faults().reset();
            if (!w.isRunning()) {
                w.restart();
            }
        }
        close();
    }

    @Override
    public void close() throws Exception {
        try {
            assertQuiescent();
        } finally {
            gateway.close();
            cluster.close();
        }
    }
}
