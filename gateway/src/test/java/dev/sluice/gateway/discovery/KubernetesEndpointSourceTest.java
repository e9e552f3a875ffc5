package dev.sluice.gateway.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.DiscoveryConfig.Kubernetes;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Kubernetes source against fabric8's mock API server (CRUD mode: a real HTTP API with real
 * watches): pods added, becoming Ready, not Ready, terminating, deleted, and a watch dropped by the
 * API server going away and coming back (the informer lists again and catches up).
 */
class KubernetesEndpointSourceTest {
    private static final Kubernetes DECODES = new Kubernetes("llm", Map.of("app", "sglang-decode"), "http",
            "bootstrap", "http");
    private static final Kubernetes PREFILLS = new Kubernetes("llm", Map.of("app", "sglang-prefill"), "http",
            "bootstrap", "http");

    private KubernetesMockServer server;
    private KubernetesClient client;
    private KubernetesEndpointSource source;

    @AfterEach
    void close() {
        if (source != null) {
            source.close();
        }
        if (client != null) {
            client.close();
        }
        if (server != null) {
            try {
                server.destroy();
            } catch (IllegalStateException e) {
                // the mock's Vert.x server waits a bounded time for its last watch connection: on a loaded
                // machine that wait can run out after the test has passed; the port is released all the same
            }
        }
    }

    /** The mock in CRUD mode: objects kept, watches fed from changes (as the JUnit extension's crud = true). */
    static KubernetesMockServer crudServer() {
        return new KubernetesMockServer(new io.fabric8.mockwebserver.Context(), new io.fabric8.mockwebserver.MockWebServer(),
                new java.util.HashMap<>(), new io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher(), false);
    }

    static Pod pod(String name, String app, String ip, boolean ready, Integer bootstrap) {
        PodBuilder b = new PodBuilder().withNewMetadata().withName(name).withNamespace("llm")
                .addToLabels("app", app).endMetadata()
                .withNewSpec().addNewContainer().withName("sglang").addNewPort().withName("http")
                .withContainerPort(30000).endPort().endContainer().endSpec()
                .withNewStatus().withPhase("Running").withPodIP(ip).addNewCondition().withType("Ready")
                .withStatus(ready ? "True" : "False").endCondition().endStatus();
        Pod p = b.build();
        if (bootstrap != null) {
            p.getSpec().getContainers().get(0).getPorts().add(new io.fabric8.kubernetes.api.model.ContainerPortBuilder()
                    .withName("bootstrap").withContainerPort(bootstrap).build());
        }
        return p;
    }

    private static boolean eventually(BooleanSupplier c) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < end) {
            if (c.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return c.getAsBoolean();
    }

    private static List<String> urls(AtomicReference<List<WorkerEndpoint>> seen) {
        List<WorkerEndpoint> s = seen.get();
        return s == null ? List.of() : s.stream().map(WorkerEndpoint::url).sorted().toList();
    }

    private void setReady(String name, boolean ready) {
        client.pods().inNamespace("llm").withName(name).edit(p -> {
            p.getStatus().getConditions().get(0).setStatus(ready ? "True" : "False");
            return p;
        });
    }

    @Test
    void readyPodsAreWorkersAndNotReadyTerminatingOrDeletedOnesAreNot() throws Exception {
        server = crudServer();
        server.init();
        client = server.createClient();
        client.pods().inNamespace("llm").resource(pod("d1", "sglang-decode", "10.0.0.1", true, null)).create();
        client.pods().inNamespace("llm").resource(pod("other", "something-else", "10.0.0.9", true, null)).create();
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        source = new KubernetesEndpointSource("decode", DECODES, Optional.empty(), client, false);
        source.start(seen::set);

        assertThat(eventually(() -> urls(seen).equals(List.of("http://10.0.0.1:30000")))).as("%s", urls(seen))
                .isTrue();
        // added, not Ready yet: not a worker; Ready: a worker
        client.pods().inNamespace("llm").resource(pod("d2", "sglang-decode", "10.0.0.2", false, null)).create();
        Thread.sleep(300);
        assertThat(urls(seen)).containsExactly("http://10.0.0.1:30000");
        setReady("d2", true);
        assertThat(eventually(() -> urls(seen).equals(List.of("http://10.0.0.1:30000", "http://10.0.0.2:30000"))))
                .as("%s", urls(seen)).isTrue();
        // Ready no longer: out
        setReady("d1", false);
        assertThat(eventually(() -> urls(seen).equals(List.of("http://10.0.0.2:30000")))).as("%s", urls(seen))
                .isTrue();
        // terminating (a deletion timestamp, the kubelet still stopping it): out
        setReady("d1", true);
        assertThat(eventually(() -> urls(seen).size() == 2)).isTrue();
        // a finalizer keeps the deleted pod, terminating (a deletion timestamp), as the kubelet stops it
        client.pods().inNamespace("llm").withName("d1").edit(p -> {
            p.getMetadata().setFinalizers(List.of("sluice.dev/test"));
            return p;
        });
        client.pods().inNamespace("llm").withName("d1").delete();
        assertThat(eventually(() -> urls(seen).equals(List.of("http://10.0.0.2:30000")))).as("%s", urls(seen))
                .isTrue();
        // deleted: out
        client.pods().inNamespace("llm").withName("d2").delete();
        assertThat(eventually(() -> urls(seen).isEmpty())).as("%s", urls(seen)).isTrue();
    }

    @Test
    void aPrefillsBootstrapPortComesFromItsNamedPortOrItsAnnotation() throws Exception {
        server = crudServer();
        server.init();
        client = server.createClient();
        client.pods().inNamespace("llm").resource(pod("p1", "sglang-prefill", "10.0.1.1", true, 8998)).create();
        Pod annotated = pod("p2", "sglang-prefill", "10.0.1.2", true, null);
        annotated.getSpec().getContainers().get(0).setPorts(List.of()); // no named port: the annotations say it
        annotated.getMetadata().setAnnotations(Map.of(Kubernetes.PORT_ANNOTATION, "31000",
                Kubernetes.BOOTSTRAP_PORT_ANNOTATION, "9000"));
        client.pods().inNamespace("llm").resource(annotated).create();
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        source = new KubernetesEndpointSource("prefill", PREFILLS, Optional.empty(), client, false);
        source.start(seen::set);

        assertThat(eventually(() -> urls(seen).size() == 2)).as("%s", urls(seen)).isTrue();
        assertThat(seen.get()).extracting(WorkerEndpoint::url, WorkerEndpoint::bootstrapPort)
                .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple("http://10.0.1.1:30000", 8998),
                        org.assertj.core.groups.Tuple.tuple("http://10.0.1.2:31000", 9000));
    }

    @Test
    void aDroppedWatchIsReEstablishedAndWhatChangedMeanwhileIsCaughtUp() throws Exception {
        server = crudServer();
        server.init(InetAddress.getLoopbackAddress(), 0);
        int port = server.getPort();
        client = server.createClient();
        client.pods().inNamespace("llm").resource(pod("d1", "sglang-decode", "10.0.0.1", true, null)).create();
        client.pods().inNamespace("llm").resource(pod("d2", "sglang-decode", "10.0.0.2", true, null)).create();
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        source = new KubernetesEndpointSource("decode", DECODES, Optional.empty(), client, false);
        source.start(seen::set);
        assertThat(eventually(() -> urls(seen).size() == 2)).isTrue();

        // the API server goes away (the watch drops): the last set stays
        server.destroy();
        Thread.sleep(500);
        assertThat(urls(seen)).as("a dropped watch keeps the last set").hasSize(2);
        // it comes back on the same address with the same pods (the mock keeps no state across a restart, and
        // answers a stale resourceVersion with a plain watch, not the 410 that makes a real API server's
        // clients list again: changes made while it was away are the API server's to replay)
        server = crudServer();
        server.init(InetAddress.getLoopbackAddress(), port);
        try (KubernetesClient writer = server.createClient()) {
            writer.pods().inNamespace("llm").resource(pod("d1", "sglang-decode", "10.0.0.1", true, null)).create();
            writer.pods().inNamespace("llm").resource(pod("d2", "sglang-decode", "10.0.0.2", true, null)).create();
            // the watch is re-established: later changes arrive through it
            long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            boolean d3Seen = false;
            while (!d3Seen && System.nanoTime() < end) {
                writer.pods().inNamespace("llm").resource(pod("d3", "sglang-decode", "10.0.0.3", true, null))
                        .createOr(r -> r.update());
                d3Seen = eventually(() -> urls(seen).contains("http://10.0.0.3:30000"));
            }
            assertThat(d3Seen).as("%s", urls(seen)).isTrue();
            writer.pods().inNamespace("llm").withName("d1").delete();
            writer.pods().inNamespace("llm").withName("d2").delete();
            assertThat(eventually(() -> urls(seen).equals(List.of("http://10.0.0.3:30000")))).as("%s", urls(seen))
                    .isTrue();
        }
    }

    @Test
    void anApiServerUnreachableAtStartDoesNotStopTheSourceWhichFindsThePodsOnceItAnswers() throws Exception {
        server = crudServer();
        server.init(InetAddress.getLoopbackAddress(), 0);
        int port = server.getPort();
        client = server.createClient();
        server.destroy(); // nothing listens there now
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        source = new KubernetesEndpointSource("decode", DECODES, Optional.empty(), client, false);
        source.start(seen::set); // returns: the gateway starts without the API server
        Thread.sleep(300);
        assertThat(seen.get()).isNull();

        server = crudServer();
        server.init(InetAddress.getLoopbackAddress(), port);
        try (KubernetesClient writer = server.createClient()) {
            writer.pods().inNamespace("llm").resource(pod("d1", "sglang-decode", "10.0.0.1", true, null)).create();
            long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!urls(seen).contains("http://10.0.0.1:30000") && System.nanoTime() < end) {
                Thread.sleep(50);
            }
            assertThat(urls(seen)).containsExactly("http://10.0.0.1:30000");
        }
    }
}
