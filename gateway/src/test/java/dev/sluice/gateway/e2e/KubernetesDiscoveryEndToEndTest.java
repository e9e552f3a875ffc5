package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.e2e.DiscoveredWorkerChecks.generations;
import static dev.sluice.gateway.e2e.DiscoveredWorkerChecks.stream;
import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway following decode pods through fabric8's mock Kubernetes API: a pod that becomes Ready
 * gets traffic (after its identity and health checks), one that is not Ready gets none, and one
 * deleted mid-stream is drained: its stream finishes, it gets nothing new, and it is retired.
 */
class KubernetesDiscoveryEndToEndTest {
    private KubernetesMockServer api;
    private KubernetesClient kube;
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose();
        }
        if (kube != null) {
            kube.close();
        }
        if (api != null) {
            try {
                api.destroy();
            } catch (IllegalStateException e) {
                // the mock's bounded wait for its last watch connection (see KubernetesEndpointSourceTest)
            }
        }
        for (String p : new String[] {"kubernetes.master", "kubernetes.auth.tryKubeConfig",
                "kubernetes.auth.tryServiceAccount", "kubernetes.namespace"}) {
            System.clearProperty(p);
        }
    }

    static Pod pod(String name, SimWorker w, boolean ready) {
        URI u = URI.create(w.url());
        return new PodBuilder().withNewMetadata().withName(name).withNamespace("llm")
                .addToLabels("app", "sglang-decode").addToAnnotations("sluice.dev/port", String.valueOf(u.getPort()))
                .endMetadata().withNewSpec().addNewContainer().withName("sglang").endContainer().endSpec()
                .withNewStatus().withPhase("Running").withPodIP(u.getHost()).addNewCondition().withType("Ready")
                .withStatus(ready ? "True" : "False").endCondition().endStatus().build();
    }

    @Test
    void readyPodsGetTrafficNotReadyOnesDoNotAndADeletedOneDrainsItsStream() throws Exception {
        api = new KubernetesMockServer(new io.fabric8.mockwebserver.Context(), new io.fabric8.mockwebserver.MockWebServer(),
                new java.util.HashMap<>(), new KubernetesCrudDispatcher(), false);
        api.init();
        kube = api.createClient();
        // the gateway builds its client the standard way: these properties point it at the mock
        System.setProperty("kubernetes.master", kube.getConfiguration().getMasterUrl());
        System.setProperty("kubernetes.auth.tryKubeConfig", "false");
        System.setProperty("kubernetes.auth.tryServiceAccount", "false");
        SimCluster cluster = SimCluster.start(1, 2, 0, SimConfig.defaults().withHealthGeneration(false)
                .withDecodeStep(Duration.ofMillis(20)), SimMode.SGLANG);
        PrefillServer prefill = cluster.prefills().get(0);
        DecodeServer first = cluster.decodes().get(0);
        DecodeServer second = cluster.decodes().get(1);
        kube.pods().inNamespace("llm").resource(pod("decode-0", first, true)).create();
        String yaml = "listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\n"
                + "disaggregation: sglang\nworkers:\n  prefill:\n    - url: " + prefill.url() + "\n      bootstrap_port: "
                + prefill.bootstrapPort() + "\n  discovery:\n    decode:\n      kubernetes:\n        namespace: llm\n"
                + "        selector: {app: sglang-decode}\n"
                + "timeouts: {connect: 1s, first_token: 30s, idle_stream: 10s}\n"
                + "health: {interval: 200ms, timeout: 500ms}\ntelemetry: {interval: 200ms}\nadmin: {port: 0}\n"
                + "routing: {prefill: {policy: round_robin}, decode: {policy: round_robin}}\n";
        GatewayServer gateway;
        try {
            gateway = new GatewayServer(ConfigLoader.parse(yaml, "test")).start();
        } catch (Exception | Error e) {
            cluster.close();
            throw e;
        }
        bed = PdTestbed.adopt(cluster, gateway);
        assertThat(gateway.awaitReady(20, TimeUnit.SECONDS)).as("the discovered decode became usable").isTrue();
        assertThat(bed.post("/generate", stream(2)).statusCode()).isEqualTo(200);
        assertThat(generations(first)).isEqualTo(1);

        // a pod that is not Ready: listed by the API, no traffic
        kube.pods().inNamespace("llm").resource(pod("decode-1", second, false)).create();
        for (int i = 0; i < 6; i++) {
            assertThat(bed.post("/generate", stream(2)).statusCode()).isEqualTo(200);
        }
        assertThat(generations(second)).isZero();
        assertThat(gateway.workers().decode()).hasSize(1);

        // Ready: traffic once its identity and health checks passed
        kube.pods().inNamespace("llm").withName("decode-1").edit(p -> {
            p.getStatus().getConditions().get(0).setStatus("True");
            return p;
        });
        assertThat(DiscoveredWorkerChecks.getsTraffic(bed, second, Duration.ofSeconds(10)))
                .as("the Ready pod gets traffic").isTrue();
        assertThat(bed.get("/readiness").statusCode()).isEqualTo(200);

        // deleted mid-stream: drained, the stream finishes, nothing new reaches it, then it is retired
        CompletableFuture<HttpResponse<String>> longOne = DiscoveredWorkerChecks.streamRunningOn(bed, second);
        assertThat(longOne).as("a stream runs on the second decode").isNotNull();
        kube.pods().inNamespace("llm").withName("decode-1").delete();
        DiscoveredWorkerChecks.drainedThenRetired(bed, gateway, second, longOne);
    }
}
