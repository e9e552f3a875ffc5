package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The deployment side of the real servers (docs/compatibility.md): what a worker says it is, an
 * admin key on SGLang's abort route, SGLang's own queue limit on a unified server, and vLLM's
 * prefill blocks freed when the client leaves.
 */
class RealServerWorkersEndToEndTest {
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 10s}";
    private SimCluster cluster;
    private GatewayServer gateway;
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        } else if (gateway != null) {
            PdTestbed.adopt(cluster, gateway).healAndClose();
        } else if (cluster != null) {
            cluster.close();
        }
    }

    private GatewayServer gateway(String yaml, Map<String, String> env) throws Exception {
        try {
            gateway = new GatewayServer(ConfigLoader.parse(yaml + "listen: {host: 127.0.0.1, port: 0}\n"
                    + "admin: {port: 0}\nhealth: {interval: 200ms, timeout: 500ms}\ntelemetry: {interval: 200ms}\n"
                    + "timeouts: " + TIMEOUTS + "\n", "test", PdTestbed.withoutCalibration(yaml, ConfigOverrides.of(env,
                    List.of())))).start();
        } catch (Exception e) {
            cluster.close();
            cluster = null;
            throw e;
        }
        return gateway;
    }

    /** A swapped prefill and decode URL is named at once: the workers' own /server_info contradicts the config. */
    @Test
    void swappedPrefillAndDecodeAreNamedMisconfigured() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false));
        gateway("disaggregation: sglang\nworkers:\n  prefill:\n    - url: " + cluster.decodes().get(0).url()
                + "\n  decode:\n    - url: " + cluster.prefills().get(0).url() + "\n", Map.of());
        Worker prefill = gateway.workers().prefill().get(0);
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.identity().misconfigured())).isTrue();
        assertThat(prefill.identity().problems().get(0)).contains("configured as prefill")
                .contains("--disaggregation-mode decode").contains("swapped");
        assertThat(eventually(Duration.ofSeconds(5), () -> gateway.workers().decode().get(0).identity()
                .misconfigured())).isTrue();
        assertThat(prefill.identity().server()).isEqualTo("sglang");
        // the deprecated route was not needed
        assertThat(cluster.decodes().get(0).stats().deprecatedCalls()).isZero();
    }

    /** Row 11: with SGLang's --admin-api-key, /abort_request needs that key: the gateway sends it. */
    @Test
    void abortsCarryTheAdminKeyAndNameExactRids() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false).withAdminApiKey("adm-key")
                .withDecodeStep(Duration.ofMillis(20)));
        gateway("disaggregation: sglang\nworkers:\n  admin_api_key_env: SIM_ADMIN_KEY\n  prefill:\n    - url: "
                + cluster.prefills().get(0).url() + "\n      bootstrap_port: " + cluster.prefills().get(0).bootstrapPort()
                + "\n  decode:\n    - url: " + cluster.decodes().get(0).url() + "\n", Map.of("SIM_ADMIN_KEY", "adm-key"));
        assertThat(gateway.awaitReady(10, TimeUnit.SECONDS)).isTrue();
        String rid;
        try (RawHttpClient client = new RawHttpClient(gateway.port())) {
            // a one-element list: a batch of one, its rid as SGLang keeps it (no rid_0 renaming to miss)
            client.post("/v1/completions", "{\"model\":\"m\",\"prompt\":[\"hello\"],\"max_tokens\":400,\"stream\":true}");
            client.readUntil("data:");
            rid = client.header("X-Request-Id");
        }
        SimWorker decode = cluster.decodes().get(0);
        // the sim refuses an abort without the admin key (401) and records none: a record is an accepted abort;
        // each names the exact rid of the batch's one item (the stream itself may have ended with its connection)
        assertThat(eventually(Duration.ofSeconds(2), () -> !decode.aborts().isEmpty())).isTrue();
        assertThat(decode.aborts()).allMatch(a -> a.rid().equals(rid + "-0"));
        assertThat(decode.awaitIdle(Duration.ofSeconds(5))).isTrue();
        assertThat(gateway.workers().all()).allMatch(w -> w.inflight() == 0);
    }

    /** Row 16: SGLang's own queue limit (unified server) answers 503: load, retried, never a sick worker. */
    @Test
    void aFullWorkerQueueIsLoadNotAFault() throws Exception {
        // a slow prefill (SGLang's waiting queue is the prefill's): six at once overflow a limit of one
        bed = PdTestbed.start(SimMode.UNIFIED, 0, 1, SimConfig.defaults().withMaxQueuedRequests(1)
                .withPrefillTokensPerSecond(20).withDecodeStep(Duration.ofMillis(5)), TIMEOUTS,
                "admission: {decode: {max_inflight_streams: 64}, prefill: {max_inflight_requests: 64}}\nretries: {max_retries: 1}\n");
        List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            all.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"), "{\"text\":\"hi " + i
                    + "\",\"sampling_params\":{\"max_new_tokens\":20}}"), HttpResponse.BodyHandlers.ofString()));
        }
        int busy = 0;
        for (CompletableFuture<HttpResponse<String>> f : all) {
            HttpResponse<String> r = f.get();
            if (r.statusCode() == 503) {
                busy++;
                assertThat(r.body()).contains("The request queue is full");
            } else {
                assertThat(r.statusCode()).isEqualTo(200);
            }
        }
        assertThat(busy).as("the worker's own queue limit answered").isPositive();
        assertThat(bed.gateway.workers().all()).allMatch(w -> w.state() == WorkerState.HEALTHY);
        assertThat(bed.metric("sluice_retries_total{reason=\"worker_busy\"}")).isPositive();
    }

    /**
     * Row 14: a vLLM client that leaves once its decode leg runs leaves no prefill blocks held for the
     * abort timeout: closing the decode leg makes the decode tell the prefill to free them (or it has
     * read them). The narrower race (the prefill answers while the gateway closes its leg) is a known
     * gap: docs/compatibility.md.
     */
    @Test
    void aVllmClientLeavingStrandsNoPrefillBlocks() throws Exception {
        bed = PdTestbed.start(SimMode.VLLM, 1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(20)),
                TIMEOUTS, "");
        for (int i = 0; i < 6; i++) {
            try (RawHttpClient client = new RawHttpClient(bed.port())) {
                client.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"hello " + i
                        + "\",\"max_tokens\":200,\"stream\":true}");
                client.readUntil("data:");
            }
        }
        SimWorker prefill = bed.cluster.prefillWorkers().get(0);
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().heldKvRequests() == 0))
                .as("held %s", prefill.stats()).isTrue();
        assertThat(prefill.stats().strandedKv()).isZero();
        assertThat(bed.metric("sluice_vllm_handoffs_total{result=\"transferred\"}")).isEqualTo(6);
    }
}
