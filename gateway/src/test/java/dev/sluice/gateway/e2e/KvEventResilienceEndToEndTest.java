package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.server.ConfigReload;
import dev.sluice.gateway.server.ReloadResult;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The KV event view in the real gateway, over real ZMQ from simulated prefills publishing SGLang's
 * events: a worker whose events stop is stale (the local tree matches it, the others' events still
 * match them) and its stream is opened
 * again; workers a reload adds or retires get or lose their view without a restart.
 */
class KvEventResilienceEndToEndTest {
    private static final String TIMEOUTS = "{connect: 1s, first_token: 30s, idle_stream: 10s, request: 60s}";
    private final AtomicInteger prompts = new AtomicInteger();
    private PdTestbed bed;
    private ConfigReload reload;

    @AfterEach
    void close() throws Exception {
        if (reload != null) {
            reload.close();
        }
        if (bed != null) {
            bed.close();
        }
    }

    @Test
    void aWorkerWhoseEventsStopIsStaleTheLocalTreeMatchesItAndItsStreamIsOpenedAgain() throws Exception {
        SimCluster cluster = cluster(2);
        bed = PdTestbed.adopt(cluster, PdTestbed.startGateway(yaml(cluster, cluster.prefills(), cluster.prefills())));
        awaitHeard(cluster.prefills());
        PrefillServer silent = cluster.prefills().get(1);
        String endpoint = silent.kvEventsEndpoint().orElseThrow();
        String name = workerOf(silent).name();
        assertThat(bed.metric("sluice_kv_view_fresh{worker=\"" + name + "\"}")).isEqualTo(1);

        silent.closeKvEvents(); // its publisher dies; the worker goes on serving
        // new prompts until one lands on it and its view, silent since, turns stale (stale_after: 1s)
        assertThat(PdTestbed.eventually(Duration.ofSeconds(20), () -> {
            post(newPrompt());
            return metric("sluice_kv_view_fresh{worker=\"" + name + "\"}") == 0;
        })).isTrue();
        double tree = bed.metric("sluice_kv_view_decisions_total{source=\"local_tree\"}");
        double events = bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}");
        post(newPrompt());
        // the other worker's view is fresh: its events still match it (the stale one: the local tree;
        // CacheAwareKvViewTest), so the decision still counts as the events'
        assertThat(bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}")).isEqualTo(events + 1);
        assertThat(bed.metric("sluice_kv_view_decisions_total{source=\"local_tree\"}")).isEqualTo(tree);
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10),
                () -> metric("sluice_kv_events_resubscribes_total{worker=\"" + name + "\"}") >= 1))
                .as("the silent stream opened again (resubscribe_after: 1s)").isTrue();

        // the publisher is back on its endpoint (a restarted worker): heard again, fresh, deciding again
        silent.publishKvEvents(endpoint, "");
        assertThat(PdTestbed.eventually(Duration.ofSeconds(30), () -> {
            flush(silent);
            return metric("sluice_kv_view_fresh{worker=\"" + name + "\"}") == 1;
        })).isTrue();
        double again = bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}");
        post(newPrompt());
        assertThat(bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}")).isEqualTo(again + 1);
    }

    @Test
    void workersAddedAndRetiredByAReloadGetAndLoseTheirView(@TempDir Path dir) throws Exception {
        SimCluster cluster = cluster(3);
        List<PrefillServer> all = cluster.prefills();
        String two = yaml(cluster, all.subList(0, 2), all);
        bed = PdTestbed.adopt(cluster, PdTestbed.startGateway(two));
        Path file = dir.resolve("gateway.yaml");
        Files.writeString(file, two);
        reload = bed.gateway.reloader(file);
        awaitHeard(all.subList(0, 2));
        assertThat(kvWorkers()).isEqualTo(2);

        Files.writeString(file, yaml(cluster, all, all)); // the third prefill joins
        ReloadResult added = reload.reload("test");
        assertThat(added.applied()).contains("workers");
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> kvWorkers() == 3)).isTrue();
        awaitHeard(all);
        String joined = workerOf(all.get(2)).name();
        assertThat(bed.metric("sluice_kv_view_fresh{worker=\"" + joined + "\"}")).isEqualTo(1);

        String leaving = workerOf(all.get(0)).name();
        Files.writeString(file, yaml(cluster, all.subList(1, 3), all)); // the first one leaves
        assertThat(reload.reload("test").applied()).contains("workers");
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> kvWorkers() == 2
                && !metricsText().contains("sluice_kv_view_fresh{worker=\"" + leaving + "\"")))
                .as("its view and its gauges went with it").isTrue();
        assertThat(bed.metric("sluice_kv_view_fresh{worker=\"" + joined + "\"}")).isEqualTo(1);
    }

    private static SimCluster cluster(int prefills) throws Exception {
        return SimCluster.start(prefills, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withHealthGeneration(false).withPrefixCacheTokens(SimConfig.DEFAULT_PREFIX_CACHE_TOKENS)
                .withKvEventsEndpoint("tcp://127.0.0.1:*"), SimMode.SGLANG);
    }

    /** Workers {@code serving}; event endpoints for all of {@code publishing}. */
    private static String yaml(SimCluster cluster, List<PrefillServer> serving, List<PrefillServer> publishing) {
        StringBuilder y = new StringBuilder(PdTestbed.sglangYaml(serving, cluster.decodes(), TIMEOUTS));
        y.append("routing:\n  prefill: {policy: cache_aware}\n  kv_events:\n    stale_after: 1s\n")
                .append("    resubscribe_after: 1s\n    endpoints:\n");
        y.append(PdTestbed.kvEventEndpoints(publishing));
        return y.toString();
    }

    private Worker workerOf(PrefillServer p) {
        return bed.gateway.workers().prefill().stream().filter(w -> w.url().equals(p.url())).findFirst()
                .orElseThrow();
    }

    /** PUB drops what it sends before a subscription arrives: flush until each one's events are heard. */
    private void awaitHeard(List<PrefillServer> prefills) throws Exception {
        assertThat(PdTestbed.eventually(Duration.ofSeconds(30), () -> {
            prefills.forEach(this::flush);
            return prefills.stream().allMatch(p -> metric("sluice_kv_events_received_total{worker=\""
                    + workerOf(p).name() + "\"}") > 0);
        })).as("every prefill's events heard").isTrue();
    }

    private void flush(PrefillServer p) {
        try {
            bed.http.send(HttpRequest.newBuilder(URI.create(p.url() + "/flush_cache"))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A chat no worker holds yet, long enough for several blocks. */
    private String newPrompt() {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"prompt "
                + prompts.incrementAndGet() + " " + "about the weather and the sea. ".repeat(12) + "\"}]}";
    }

    private void post(String body) {
        try {
            assertThat(bed.post("/v1/chat/completions", body).statusCode()).isEqualTo(200);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private double metric(String line) {
        try {
            return bed.metric(line);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private String metricsText() {
        try {
            return bed.metrics();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private long kvWorkers() {
        return metricsText().lines().filter(l -> l.startsWith("sluice_kv_view_fresh{")).count();
    }
}
