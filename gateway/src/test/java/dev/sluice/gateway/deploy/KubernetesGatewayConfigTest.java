package dev.sluice.gateway.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.LoadedConfig;
import dev.sluice.gateway.server.GatewayServer;
import io.fabric8.kubernetes.api.model.HTTPGetAction;
import io.fabric8.kubernetes.api.model.Lifecycle;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.openshift.api.model.monitoring.v1.Endpoint;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitor;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * What the gateway makes of the pod deploy/kubernetes/ describes: the ConfigMap's gateway.yaml loads
 * through the gateway's own loader with the pod's environment and arguments (the Secret's password, the
 * pod's name as replica_id, the external-Redis overlay's URL); the probes and the ServiceMonitor name
 * ports and paths a real gateway, started from that file, serves; the pod's grace period outlasts the
 * preStop pause and the drain, and /readiness turns 503 once the drain starts.
 */
class KubernetesGatewayConfigTest {
    private static final String SOURCE = "deploy/kubernetes/gateway/configmap.yaml#gateway.yaml";
    private static KubernetesObjects objects;
    private static GatewayPod pod;

    @BeforeAll
    static void load() throws IOException {
        objects = KubernetesObjects.load();
        pod = new GatewayPod(objects);
    }

    /** The file as the pod reads it, coordination and all. */
    @Test
    void theConfigMapLoadsAsThePodStartsIt() {
        LoadedConfig loaded = ConfigLoader.check(pod.configYaml(), SOURCE, pod.overrides(List.of(), List.of()));
        JsonNode coordination = tree(loaded).path("coordination");
        assertThat(coordination.path("replica_id").asString("")).isEqualTo(GatewayPod.POD_NAME);
        assertThat(coordination.path("redis").path("url").asString("")).isEqualTo("redis://sluice-valkey:6379");
        assertThat(coordination.path("redis").path("password_env").asString("")).isEqualTo("SLUICE_REDIS_PASSWORD");
        assertThat(loaded.config().workers().prefill()).hasSizeGreaterThanOrEqualTo(1);
        assertThat(loaded.config().workers().decode()).hasSizeGreaterThanOrEqualTo(1);
        // the admin listener binds the pod's address: the Secret's token is what lets it start
        assertThat(loaded.config().admin().host()).isEqualTo("0.0.0.0");
        assertThat(loaded.config().admin().token()).isPresent();
        java.util.Map<String, String> withoutToken = new java.util.LinkedHashMap<>(pod.env());
        assertThat(withoutToken.remove("SLUICE_ADMIN_TOKEN")).as("the Deployment sets SLUICE_ADMIN_TOKEN").isNotNull();
        assertThat(org.assertj.core.api.Assertions.catchThrowableOfType(dev.sluice.gateway.config.ConfigException.class,
                () -> ConfigLoader.check(pod.configYaml(), SOURCE, dev.sluice.gateway.config.ConfigOverrides.of(
                        withoutToken, pod.sets(List.of())))).getMessage())
                .contains("admin.host: 0.0.0.0").contains("SLUICE_ADMIN_TOKEN or admin.token_file");
    }

    /** external-redis/: its JSON patch adds a --set of the URL to the gateway container's arguments. */
    @Test
    void theExternalRedisOverlayLoadsToo() throws IOException {
        JsonNode kustomization = KubernetesObjects.STRICT.readTree(
                Files.readString(objects.dir.resolve("external-redis/kustomization.yaml")));
        JsonNode patch = kustomization.path("patches").get(0);
        assertThat(patch.path("target").path("kind").asString("")).isEqualTo("Deployment");
        assertThat(patch.path("target").path("name").asString("")).isEqualTo(pod.deployment.getMetadata().getName());
        List<String> extra = new ArrayList<>();
        for (JsonNode op : KubernetesObjects.STRICT.readTree(patch.path("patch").asString(""))) {
            assertThat(op.path("op").asString("")).isEqualTo("add");
            // containers/0 must be the gateway for the patch to land on it
            assertThat(op.path("path").asString("")).isEqualTo("/spec/template/spec/containers/0/args/-");
            extra.add(op.path("value").asString(""));
        }
        assertThat(pod.spec.getContainers().get(0)).isSameAs(pod.container);
        String url = pod.sets(extra).stream().filter(s -> s.startsWith("coordination.redis.url=")).reduce((a, b) -> b)
                .orElseThrow().substring("coordination.redis.url=".length());
        assertThat(url).startsWith("rediss://");
        LoadedConfig loaded = ConfigLoader.check(pod.configYaml(), SOURCE, pod.overrides(extra, List.of()));
        assertThat(tree(loaded).path("coordination").path("redis").path("url").asString("")).isEqualTo(url);
    }

    /**
     * The declared ports are the configured ones, and a gateway started from this very file (on free
     * loopback ports instead, and without Redis: what is checked here is paths and listeners) answers
     * the probes' and the ServiceMonitor's paths on the listeners those ports belong to.
     */
    @Test
    void probesAndScrapesReachWhatTheGatewayServes() throws Exception {
        // coordination=null: Redis is not what this test is about (and the example host does not resolve here)
        GatewayConfig declared = ConfigLoader.parse(pod.configYaml(), SOURCE,
                pod.overrides(List.of(), List.of("coordination=null")));
        int listenPort = declared.listen().port();
        int adminPort = declared.admin().port();
        assertThat(declared.admin().enabled()).isTrue();
        assertThat(declared.admin().host()).as("Prometheus scrapes the pod's address").isEqualTo("0.0.0.0");

        Probe readiness = pod.container.getReadinessProbe();
        Probe liveness = pod.container.getLivenessProbe();
        Probe startup = pod.container.getStartupProbe();
        assertThat(readiness.getHttpGet().getPath()).isEqualTo("/readiness");
        assertThat(liveness.getHttpGet().getPath()).isEqualTo("/health");
        ServiceMonitor monitor = objects.all(ServiceMonitor.class).get(0);
        Service admin = objects.all(Service.class).stream()
                .filter(s -> LabelSelectors.matches(monitor.getSpec().getSelector(), s.getMetadata().getLabels()))
                .findFirst().orElseThrow();
        Endpoint scrape = monitor.getSpec().getEndpoints().get(0);
        int scrapePort = pod.containerPort(admin.getSpec().getPorts().stream()
                .filter(p -> p.getName().equals(scrape.getPort())).findFirst().orElseThrow().getTargetPort());
        assertThat(scrapePort).isEqualTo(adminPort);
        Service client = objects.one(Service.class, "sluice-gateway");
        assertThat(pod.containerPort(client.getSpec().getPorts().get(0).getTargetPort())).isEqualTo(listenPort);
        for (var p : pod.container.getPorts()) {
            assertThat(p.getContainerPort()).as("container port %s", p.getName()).isIn(listenPort, adminPort);
        }

        // the example's workers are cluster DNS names: here, loopback ports where nothing listens (no lookup
        // leaves the machine; the workers are unusable either way, which /readiness must then say)
        GatewayConfig running = ConfigLoader.parse(pod.configYaml(), SOURCE, pod.overrides(List.of(), List.of(
                "coordination=null", "listen.host=127.0.0.1", "listen.port=0", "admin.host=127.0.0.1", "admin.port=0",
                "workers.prefill=[{url: \"http://127.0.0.1:1\", bootstrap_port: 8998}]",
                "workers.decode=[{url: \"http://127.0.0.1:2\"}]")));
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        try (GatewayServer gateway = new GatewayServer(running)) {
            gateway.start();
            // the declared port decides the listener: listen.port -> the client listener, admin.port -> admin
            java.util.function.IntUnaryOperator bound = declaredPort -> {
                if (declaredPort == listenPort) {
                    return gateway.port();
                }
                if (declaredPort == adminPort) {
                    return gateway.adminPort();
                }
                throw new AssertionError("port " + declaredPort + " is neither listen.port nor admin.port");
            };
            // /health: 200 whatever the workers (none of the example's resolve here)
            for (Probe probe : List.of(liveness, startup)) {
                HttpResponse<String> r = get(http, bound.applyAsInt(pod.containerPort(probe.getHttpGet().getPort())),
                        probe.getHttpGet());
                assertThat(r.statusCode()).as("%s", probe.getHttpGet().getPath()).isEqualTo(200);
            }
            // /readiness: served, 503 with its verdict while no worker is usable
            HttpGetActionCall ready = new HttpGetActionCall(http, bound.applyAsInt(pod.containerPort(readiness.getHttpGet().getPort())),
                    readiness.getHttpGet());
            HttpResponse<String> r = ready.call();
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.body()).contains("\"status\":\"not_ready\"");
            // the scrape: Prometheus text on the admin listener
            HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                    + bound.applyAsInt(scrapePort) + scrape.getPath())).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(metrics.statusCode()).isEqualTo(200);
            assertThat(metrics.body()).contains("# TYPE sluice_");
            // and not on the client port (listen.internal_endpoints: false): hence the admin Service
            HttpResponse<String> hidden = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                    + gateway.port() + "/metrics")).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(hidden.statusCode()).isEqualTo(404);

            // SIGTERM's drain: /readiness is 503 from its start, so the endpoint leaves every load balancer
            gateway.drain(Duration.ofSeconds(2)); // nothing in flight: returns at once
            HttpResponse<String> draining = ready.call();
            assertThat(draining.statusCode()).isEqualTo(503);
            assertThat(gateway.liveRequests()).isZero();
        }
    }

    /** One probe's GET, as the kubelet sends it. */
    private record HttpGetActionCall(HttpClient http, int port, HTTPGetAction action) {
        HttpResponse<String> call() throws IOException, InterruptedException {
            return get(http, port, action);
        }
    }

    private static HttpResponse<String> get(HttpClient http, int port, HTTPGetAction action)
            throws IOException, InterruptedException {
        assertThat(action.getScheme() == null || action.getScheme().equals("HTTP")).isTrue();
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + action.getPath()))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * The kubelet's SIGKILL comes terminationGracePeriodSeconds after the preStop hook starts: the pause,
     * then SIGTERM's drain (admission.drain_grace), then up to 3 s of aborting what is left and the close.
     * Same margin as the systemd unit (SystemdUnitsTest): 10 s past pause + drain_grace.
     */
    @Test
    void theGracePeriodOutlastsThePauseAndTheDrain() {
        GatewayConfig config = ConfigLoader.parse(pod.configYaml(), SOURCE,
                pod.overrides(List.of(), List.of("coordination=null")));
        Duration drain = config.admission().drainGrace();
        Lifecycle lifecycle = pod.container.getLifecycle();
        assertThat(lifecycle.getPreStop()).as("a preStop pause before SIGTERM").isNotNull();
        long pause;
        if (lifecycle.getPreStop().getSleep() != null) {
            pause = lifecycle.getPreStop().getSleep().getSeconds();
        } else {
            List<String> exec = lifecycle.getPreStop().getExec().getCommand();
            assertThat(exec.get(0)).endsWith("sleep");
            pause = Long.parseLong(exec.get(1));
        }
        // long enough for the endpoint's removal to reach kube-proxy and load balancers, short against the drain
        assertThat(pause).isBetween(3L, 15L);
        long grace = pod.spec.getTerminationGracePeriodSeconds();
        assertThat(Duration.ofSeconds(grace)).isGreaterThanOrEqualTo(drain.plusSeconds(pause + 10));
        // the readiness probe notices the drain within a few seconds even where endpoints lag
        Probe readiness = pod.container.getReadinessProbe();
        assertThat((long) readiness.getPeriodSeconds() * readiness.getFailureThreshold()).isLessThanOrEqualTo(pause + 5);
    }

    /** An edit of the ConfigMap reaches the file (a directory mount; subPath would freeze it) and the file watch reloads it. */
    @Test
    void theConfigMapIsMountedAsADirectorySoEditsReload() {
        VolumeMount mount = pod.configMount();
        assertThat(mount.getSubPath()).isNull();
        assertThat(mount.getReadOnly()).isTrue();
        assertThat(pod.configMap().getData()).containsOnlyKeys(pod.configPath().getFileName().toString());
    }

    private static JsonNode tree(LoadedConfig loaded) {
        return KubernetesObjects.STRICT.readTree(loaded.effectiveYaml());
    }
}
