package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * scripts/bench-discovery: the discovery goals measured from outside the gateway (its HTTP port, the
 * simulated workers' own journals, fabric8's mock Kubernetes API), figures into a JSON summary. Not
 * part of the test run: enabled by {@code -Dsluice.bench=discovery}.
 */
@EnabledIfSystemProperty(named = "sluice.bench", matches = "discovery")
class DiscoveryBenchmark {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String stream(int tokens) {
        return "{\"text\":\"hello\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":" + tokens + "}}";
    }

    private static List<Long> generateTimes(SimWorker w) {
        return w.journal().stream().filter(r -> r.path().equals("/generate")).map(r -> r.receivedNanos()).toList();
    }

    /** Clients that send {@code tokens}-token streams back to back until stopped; counts outcomes. */
    private static final class Load {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicInteger ok = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        final List<Thread> threads = new ArrayList<>();

        Load(PdTestbed bed, int clients, int tokens) {
            for (int i = 0; i < clients; i++) {
                Thread t = new Thread(() -> {
                    while (!stop.get()) {
                        try {
                            HttpResponse<String> r = bed.http.send(PdTestbed.postRequest(bed.uri("/generate"),
                                    stream(tokens)), HttpResponse.BodyHandlers.ofString());
                            boolean good = r.statusCode() == 200 && r.body().contains("[DONE]")
                                    && !r.body().contains("\"error\"");
                            (good ? ok : failed).incrementAndGet();
                        } catch (Exception e) {
                            failed.incrementAndGet();
                        }
                    }
                });
                t.start();
                threads.add(t);
            }
        }

        void stop() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join(60_000);
            }
        }
    }

    @Test
    void measure() throws Exception {
        Path out = Path.of(System.getProperty("sluice.bench.out", "target/bench-discovery"));
        Files.createDirectories(out);
        ObjectNode summary = JSON.createObjectNode();
        kubernetes(summary);
        adminDrain(summary);
        Files.writeString(out.resolve("summary.json"), summary.toPrettyString());
        System.out.println("BENCH-DISCOVERY " + summary.toPrettyString());
    }

    private static void kubernetes(ObjectNode summary) throws Exception {
        KubernetesMockServer api = new KubernetesMockServer(new io.fabric8.mockwebserver.Context(),
                new io.fabric8.mockwebserver.MockWebServer(), new java.util.HashMap<>(), new KubernetesCrudDispatcher(),
                false);
        api.init();
        KubernetesClient kube = api.createClient();
        System.setProperty("kubernetes.master", kube.getConfiguration().getMasterUrl());
        System.setProperty("kubernetes.auth.tryKubeConfig", "false");
        System.setProperty("kubernetes.auth.tryServiceAccount", "false");
        SimCluster cluster = SimCluster.start(1, 2, 0, SimConfig.defaults().withHealthGeneration(false)
                .withDecodeStep(Duration.ofMillis(20)), SimMode.SGLANG);
        PrefillServer prefill = cluster.prefills().get(0);
        DecodeServer first = cluster.decodes().get(0);
        DecodeServer second = cluster.decodes().get(1);
        kube.pods().inNamespace("llm").resource(KubernetesDiscoveryEndToEndTest.pod("decode-0", first, true)).create();
        // the product's defaults for health, telemetry and routing: only the addresses are the bench's
        String yaml = "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\n"
                + "disaggregation: sglang\nworkers:\n  prefill:\n    - url: " + prefill.url() + "\n      bootstrap_port: "
                + prefill.bootstrapPort() + "\n  discovery:\n    decode:\n      kubernetes:\n        namespace: llm\n"
                + "        selector: {app: sglang-decode}\n";
        GatewayServer gateway = new GatewayServer(ConfigLoader.parse(yaml, "bench")).start();
        PdTestbed bed = PdTestbed.adopt(cluster, gateway);
        try {
            gateway.awaitReady(20, TimeUnit.SECONDS);
            // 1. Ready -> first request on the pod, under a steady load, five times
            Load load = new Load(bed, 4, 2);
            ArrayNode readyMs = summary.putArray("k8s_ready_to_first_request_ms");
            // the part that is the watch's (the API server to the gateway's lists) and the part that is the
            // gateway's (in its lists to the first request: identity and health checks)
            ArrayNode listedMs = summary.putArray("k8s_ready_to_listed_by_gateway_ms");
            for (int round = 0; round < 5; round++) {
                kube.pods().inNamespace("llm").resource(KubernetesDiscoveryEndToEndTest.pod("decode-1", second, false))
                        .create();
                Thread.sleep(500);
                long before = generateTimes(second).size();
                long t0 = System.nanoTime();
                kube.pods().inNamespace("llm").withName("decode-1").edit(p -> {
                    p.getStatus().getConditions().get(0).setStatus("True");
                    return p;
                });
                long[] listed = {0};
                eventually(Duration.ofSeconds(30), () -> {
                    if (listed[0] == 0 && gateway.workers().decode().size() == 2) {
                        listed[0] = System.nanoTime();
                    }
                    return generateTimes(second).size() > before;
                });
                listedMs.add(listed[0] == 0 ? -1 : (listed[0] - t0) / 1_000_000);
                List<Long> times = generateTimes(second);
                readyMs.add(times.size() > before ? (times.get((int) before) - t0) / 1_000_000 : -1);
                kube.pods().inNamespace("llm").withName("decode-1").delete();
                eventually(Duration.ofSeconds(30), () -> gateway.drainingWorkers() == 0
                        && gateway.workers().decode().size() == 1);
            }
            load.stop();
            summary.put("k8s_load_requests_ok", load.ok.get()).put("k8s_load_requests_failed", load.failed.get());

            // 2. a pod deleted mid-stream: its streams finish (drained) or end with an error; none hangs
            kube.pods().inNamespace("llm").resource(KubernetesDiscoveryEndToEndTest.pod("decode-1", second, true))
                    .create();
            eventually(Duration.ofSeconds(30), () -> gateway.workers().decode().stream().filter(Worker::routable)
                    .count() == 2);
            List<CompletableFuture<HttpResponse<String>>> streams = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                streams.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"), stream(150)),
                        HttpResponse.BodyHandlers.ofString()));
            }
            eventually(Duration.ofSeconds(10), () -> second.stats().running() > 0);
            Thread.sleep(1000);
            int onSecond = second.stats().running();
            long deletedAt = System.nanoTime();
            kube.pods().inNamespace("llm").withName("decode-1").delete();
            int finished = 0;
            int errored = 0;
            int hung = 0;
            for (CompletableFuture<HttpResponse<String>> f : streams) {
                try {
                    HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
                    if (r.statusCode() == 200 && r.body().contains("[DONE]") && !r.body().contains("\"error\"")) {
                        finished++;
                    } else {
                        errored++;
                    }
                } catch (java.util.concurrent.TimeoutException e) {
                    hung++;
                }
            }
            long after = generateTimes(second).stream().filter(t -> t > deletedAt).count();
            eventually(Duration.ofSeconds(10), () -> gateway.drainingWorkers() == 0);
            summary.putObject("k8s_pod_deleted_mid_stream").put("streams", streams.size())
                    .put("on_deleted_pod_at_delete", onSecond).put("finished", finished).put("errored", errored)
                    .put("hung", hung).put("requests_to_deleted_pod_after_delete", after)
                    .put("retired", gateway.drainingWorkers() == 0 && gateway.workers().decode().size() == 1);
        } finally {
            bed.close();
            kube.close();
            try {
                api.destroy();
            } catch (IllegalStateException e) {
                // the mock's bounded wait for its last watch
            }
        }
    }

    private static void adminDrain(ObjectNode summary) throws Exception {
        PdTestbed bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(20)),
                "{connect: 1s, first_token: 30s, idle_stream: 10s}", "");
        try {
            DecodeServer second = bed.cluster.decodes().get(1);
            URI u = URI.create(second.url());
            String id = u.getHost() + ":" + u.getPort();
            Worker w = bed.gateway.workers().decode().get(1);
            Load load = new Load(bed, 8, 40);
            Thread.sleep(3000);
            long drainAt = System.nanoTime();
            HttpResponse<String> r = bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                    + bed.gateway.adminPort() + "/admin/workers/" + id + "/drain"))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            long[] idleAt = {0};
            long[] retiredAt = {0};
            eventually(Duration.ofSeconds(30), () -> {
                if (idleAt[0] == 0 && w.inflight() == 0) {
                    idleAt[0] = System.nanoTime();
                }
                if (bed.gateway.workers().decode().size() == 1) {
                    retiredAt[0] = System.nanoTime();
                    return true;
                }
                return false;
            });
            Thread.sleep(3000);
            load.stop();
            long after = generateTimes(second).stream().filter(t -> t > drainAt).count();
            summary.putObject("admin_drain_under_load").put("drain_status", r.statusCode())
                    .put("requests_ok", load.ok.get()).put("requests_failed", load.failed.get())
                    .put("requests_to_drained_worker_after_drain", after)
                    .put("last_stream_end_after_drain_ms", (idleAt[0] - drainAt) / 1_000_000)
                    .put("retired_after_last_stream_ms", (retiredAt[0] - idleAt[0]) / 1_000_000);
        } finally {
            bed.close();
        }
    }
}
