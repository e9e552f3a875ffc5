package dev.sluice.gateway.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.TopologySpreadConstraint;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.openshift.api.model.monitoring.v1.Endpoint;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitor;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * deploy/kubernetes/: every object parses into its typed kind (fabric8), and the objects agree with one
 * another and with the image: selectors select the gateway's pods, ports are the ones declared, the
 * pods run unprivileged on a read-only root, the JVM fits its container, and the Redis password only
 * ever comes from a Secret. No cluster and no kubectl: the typed model is the check. What the gateway
 * itself must make of the pod (its configuration, the paths it serves, the drain) is
 * {@link KubernetesGatewayConfigTest}.
 */
class KubernetesManifestsTest {
    private static KubernetesObjects objects;
    private static GatewayPod pod;

    @BeforeAll
    static void load() throws IOException {
        objects = KubernetesObjects.load();
        pod = new GatewayPod(objects);
    }

    @Test
    void everyManifestParsesIntoItsKind() {
        List<Path> files = KubernetesObjects.manifestFiles(objects.dir);
        assertThat(files).hasSizeGreaterThanOrEqualTo(10);
        Set<Path> withObjects = new HashSet<>();
        for (KubernetesObjects.Parsed p : objects.all) {
            withObjects.add(p.file());
            HasMetadata o = p.object();
            assertThat(o.getMetadata().getName()).as("%s: metadata.name", p.file()).isNotBlank();
            assertThat(KubernetesObjects.KINDS.get(o.getApiVersion() + "/" + o.getKind())).as("%s", p.file())
                    .isEqualTo(o.getClass());
        }
        assertThat(withObjects).as("every file holds at least one object").containsExactlyInAnyOrderElementsOf(files);
        for (Class<? extends HasMetadata> kind : KubernetesObjects.KINDS.values()) {
            assertThat(objects.all(kind)).as("a %s", kind.getSimpleName()).isNotEmpty();
        }
        // names are unique per kind (one namespace)
        Set<String> seen = new HashSet<>();
        for (KubernetesObjects.Parsed p : objects.all) {
            assertThat(seen.add(p.object().getKind() + "/" + p.object().getMetadata().getName()))
                    .as("%s %s twice", p.object().getKind(), p.object().getMetadata().getName()).isTrue();
        }
    }

    /** The parse would prove nothing if it were lenient: a misspelt field, an unknown kind, a key twice. */
    @Test
    void theParseRefusesWhatTheApiServerWouldNot() throws IOException {
        String deployment = Files.readString(objects.dir.resolve("gateway/deployment.yaml"));
        assertThat(KubernetesObjects.parse(deployment, "deployment.yaml")).hasSize(1);
        assertThatThrownBy(() -> KubernetesObjects.parse(deployment.replace("terminationGracePeriodSeconds:",
                "terminationGracePeriodSecond:"), "typo")).hasMessageContaining("terminationGracePeriodSecond");
        assertThatThrownBy(() -> KubernetesObjects.parse(deployment.replace("readOnlyRootFilesystem: true",
                "readOnlyRootFileSystem: true"), "typo")).hasMessageContaining("readOnlyRootFileSystem");
        String monitor = Files.readString(objects.dir.resolve("gateway/servicemonitor.yaml"));
        assertThatThrownBy(() -> KubernetesObjects.parse(monitor.replace("scrapeTimeout:", "scrape_timeout:"), "typo"))
                .hasMessageContaining("scrape_timeout");
        assertThatThrownBy(() -> KubernetesObjects.parse(deployment.replace("kind: Deployment", "kind: Deploymnet"),
                "kind")).hasMessageContaining("apps/v1/Deploymnet");
        assertThatThrownBy(() -> KubernetesObjects.parse(deployment.replace("  replicas: 3\n",
                "  replicas: 3\n  replicas: 1\n"), "twice")).hasMessageContaining("replicas");
    }

    /** kustomize applies only what a kustomization lists: every manifest is reachable (the example Secrets on purpose not). */
    @Test
    void theKustomizationsListEveryManifest() throws IOException {
        Set<Path> listed = new HashSet<>();
        for (Path k : KubernetesObjects.kustomizations(objects.dir)) {
            JsonNode doc = KubernetesObjects.STRICT.readTree(Files.readString(k));
            assertThat(doc.path("kind").asString("")).as("%s", k).isEqualTo("Kustomization");
            for (JsonNode r : doc.path("resources")) {
                Path target = k.getParent().resolve(r.asString()).normalize();
                if (Files.isDirectory(target)) {
                    assertThat(target.resolve("kustomization.yaml")).as("%s: %s", k, r).isRegularFile();
                } else {
                    assertThat(target).as("%s: %s", k, r).isRegularFile();
                    listed.add(target);
                }
            }
        }
        List<Path> expected = KubernetesObjects.manifestFiles(objects.dir).stream()
                .filter(f -> !f.getFileName().toString().endsWith(".example.yaml")).toList();
        assertThat(listed).containsExactlyInAnyOrderElementsOf(expected);
        // the default (in-cluster Valkey) and the external-Redis overlay
        JsonNode top = KubernetesObjects.STRICT.readTree(Files.readString(objects.dir.resolve("kustomization.yaml")));
        assertThat(top.path("resources").toString()).contains("gateway", "valkey");
        JsonNode ext = KubernetesObjects.STRICT.readTree(Files.readString(objects.dir.resolve("external-redis/kustomization.yaml")));
        assertThat(ext.path("resources").toString()).contains("../gateway").doesNotContain("valkey");
    }

    @Test
    void theGatewayIsAFleetSpreadOverNodes() {
        var spec = pod.deployment.getSpec();
        Map<String, String> podLabels = spec.getTemplate().getMetadata().getLabels();
        assertThat(spec.getReplicas()).isGreaterThanOrEqualTo(2);
        assertThat(LabelSelectors.matches(spec.getSelector(), podLabels)).as("the Deployment selects its own pods").isTrue();
        // a rolling update never takes capacity away: a new pod is ready before an old one drains
        assertThat(spec.getStrategy().getType()).isEqualTo("RollingUpdate");
        assertThat(spec.getStrategy().getRollingUpdate().getMaxUnavailable().getIntVal()).isZero();
        assertThat(spec.getStrategy().getRollingUpdate().getMaxSurge().getIntVal()).isGreaterThanOrEqualTo(1);
        // across nodes: a hard spread over host names (or a required anti-affinity) on the gateway's own pods
        List<TopologySpreadConstraint> spread = pod.spec.getTopologySpreadConstraints();
        boolean hardSpread = spread != null && spread.stream().anyMatch(c -> c.getTopologyKey().equals("kubernetes.io/hostname")
                && c.getWhenUnsatisfiable().equals("DoNotSchedule") && c.getMaxSkew() == 1
                && LabelSelectors.matches(c.getLabelSelector(), podLabels));
        boolean antiAffinity = pod.spec.getAffinity() != null && pod.spec.getAffinity().getPodAntiAffinity() != null
                && pod.spec.getAffinity().getPodAntiAffinity().getRequiredDuringSchedulingIgnoredDuringExecution() != null
                && pod.spec.getAffinity().getPodAntiAffinity().getRequiredDuringSchedulingIgnoredDuringExecution().stream()
                        .anyMatch(t -> t.getTopologyKey().equals("kubernetes.io/hostname")
                                && LabelSelectors.matches(t.getLabelSelector(), podLabels));
        assertThat(hardSpread || antiAffinity).as("replicas spread across nodes").isTrue();
        Container c = pod.container;
        assertThat(c.getResources().getRequests()).containsKeys("cpu", "memory");
        assertThat(c.getResources().getLimits()).containsKey("memory");
    }

    @Test
    void theClientServiceAndTheServiceMonitorSelectTheGatewayPods() {
        Map<String, String> podLabels = pod.deployment.getSpec().getTemplate().getMetadata().getLabels();
        Service client = objects.one(Service.class, "sluice-gateway");
        assertThat(LabelSelectors.matches(client.getSpec().getSelector(), podLabels)).isTrue();
        // clients reach the serving port only: /metrics and /admin/state are not theirs
        assertThat(client.getSpec().getPorts()).extracting(p -> pod.containerPort(p.getTargetPort()))
                .containsExactly(pod.containerPort(new io.fabric8.kubernetes.api.model.IntOrString("http")));

        List<ServiceMonitor> monitors = objects.all(ServiceMonitor.class);
        assertThat(monitors).hasSize(1);
        ServiceMonitor monitor = monitors.get(0);
        List<Service> scraped = objects.all(Service.class).stream()
                .filter(s -> LabelSelectors.matches(monitor.getSpec().getSelector(), s.getMetadata().getLabels())).toList();
        assertThat(scraped).as("the ServiceMonitor selects exactly the admin Service").hasSize(1);
        Service admin = scraped.get(0);
        assertThat(admin.getSpec().getClusterIP()).as("headless: Prometheus scrapes each pod").isEqualTo("None");
        assertThat(LabelSelectors.matches(admin.getSpec().getSelector(), podLabels)).isTrue();
        for (Endpoint e : monitor.getSpec().getEndpoints()) {
            ServicePort port = admin.getSpec().getPorts().stream().filter(p -> p.getName().equals(e.getPort())).findFirst()
                    .orElseThrow(() -> new AssertionError("the admin Service has no port named " + e.getPort()));
            assertThat(pod.containerPort(port.getTargetPort())).as("scraped container port")
                    .isEqualTo(pod.containerPort(new io.fabric8.kubernetes.api.model.IntOrString("admin")));
            assertThat(e.getPath()).isEqualTo("/metrics");
        }
        // the NetworkPolicy selects the same pods and lets clients reach the serving port
        NetworkPolicy policy = objects.one(NetworkPolicy.class, "sluice-gateway");
        assertThat(LabelSelectors.matches(policy.getSpec().getPodSelector(), podLabels)).isTrue();
        assertThat(policy.getSpec().getIngress()).anySatisfy(rule -> {
            assertThat(rule.getFrom()).isNullOrEmpty();
            assertThat(rule.getPorts()).extracting(p -> pod.containerPort(p.getPort()))
                    .containsExactly(pod.containerPort(new io.fabric8.kubernetes.api.model.IntOrString("http")));
        });
    }

    @Test
    void theDisruptionBudgetSelectsTheGatewayPodsAndLetsOneGo() {
        Map<String, String> podLabels = pod.deployment.getSpec().getTemplate().getMetadata().getLabels();
        List<PodDisruptionBudget> pdbs = objects.all(PodDisruptionBudget.class).stream()
                .filter(p -> LabelSelectors.matches(p.getSpec().getSelector(), podLabels)).toList();
        assertThat(pdbs).hasSize(1);
        var pdb = pdbs.get(0).getSpec();
        int replicas = pod.deployment.getSpec().getReplicas();
        // a budget that allows no disruption blocks every node drain; one that allows all protects nothing
        if (pdb.getMaxUnavailable() != null) {
            assertThat(pdb.getMaxUnavailable().getIntVal()).isBetween(1, replicas - 1);
        } else {
            assertThat(pdb.getMinAvailable().getIntVal()).isBetween(1, replicas - 1);
        }
        assertThat(pdb.getUnhealthyPodEvictionPolicy()).isEqualTo("AlwaysAllow");
    }

    /** The Dockerfile's user and jar are the ones the Deployment runs with. */
    @Test
    void theGatewayRunsUnprivilegedOnAReadOnlyRoot() throws IOException {
        String dockerfile = Files.readString(objects.dir.resolve("Dockerfile"));
        assertThat(dockerfile).containsPattern("(?m)^FROM eclipse-temurin:17-jre");
        Matcher user = Pattern.compile("(?m)^USER (\\d+):(\\d+)$").matcher(dockerfile);
        assertThat(user.find()).as("a numeric USER uid:gid").isTrue();
        Matcher jar = Pattern.compile("(?m)^COPY gateway/target/sluice-gateway.jar (\\S+)$").matcher(dockerfile);
        assertThat(jar.find()).as("the fat jar copied in").isTrue();

        PodSecurityContext podSc = pod.spec.getSecurityContext();
        assertThat(podSc.getRunAsNonRoot()).isTrue();
        assertThat(podSc.getRunAsUser()).isEqualTo(Long.parseLong(user.group(1))).isNotZero();
        assertThat(podSc.getRunAsGroup()).isEqualTo(Long.parseLong(user.group(2)));
        assertThat(podSc.getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
        assertThat(pod.spec.getAutomountServiceAccountToken()).isFalse();
        SecurityContext sc = pod.container.getSecurityContext();
        assertThat(sc.getReadOnlyRootFilesystem()).isTrue();
        assertThat(sc.getAllowPrivilegeEscalation()).isFalse();
        assertThat(sc.getCapabilities().getDrop()).containsExactly("ALL");
        assertThat(sc.getCapabilities().getAdd()).isNullOrEmpty();
        // the only writable place: /tmp, an emptyDir (JVM perf data, Netty's native library)
        List<VolumeMount> writable = pod.container.getVolumeMounts().stream()
                .filter(m -> !Boolean.TRUE.equals(m.getReadOnly())).toList();
        assertThat(writable).extracting(VolumeMount::getMountPath).containsExactly("/tmp");
        assertThat(pod.volume(writable.get(0).getName()).getEmptyDir()).isNotNull();
        // the JVM runs the jar where the image put it
        List<String> command = pod.container.getCommand();
        assertThat(command.get(0)).isEqualTo("java");
        assertThat(command.get(command.indexOf("-jar") + 1)).isEqualTo(jar.group(1));
        assertThat(dockerfile).contains("\"-jar\", \"" + jar.group(1) + "\"");
    }

    /** Heap and Netty's direct buffers leave room under the memory limit; the JVM counts the CPUs it was given. */
    @Test
    void theJvmFitsItsContainer() {
        List<String> command = pod.container.getCommand();
        long heap = jvmSize(command, "-Xmx");
        long direct = jvmSize(command, "-XX:MaxDirectMemorySize=");
        long limit = bytes(pod.container.getResources().getLimits().get("memory"));
        assertThat(pod.container.getResources().getRequests().get("memory")).as("guaranteed memory")
                .isEqualTo(pod.container.getResources().getLimits().get("memory"));
        // metaspace, code cache, thread stacks, GC structures: at least 256 MiB beside heap and direct buffers
        assertThat(heap + direct + (256L << 20)).isLessThanOrEqualTo(limit);
        assertThat(command).contains("-XX:+ExitOnOutOfMemoryError");
        // http.event_loop_threads: 0 = one loop per CPU the JVM sees; without a CPU limit that would be the node's
        assertThat(pod.container.getResources().getLimits()).doesNotContainKey("cpu");
        String cpus = command.stream().filter(a -> a.startsWith("-XX:ActiveProcessorCount=")).findFirst()
                .orElseThrow(() -> new AssertionError("no -XX:ActiveProcessorCount")).split("=")[1];
        assertThat(new BigDecimal(cpus)).isEqualByComparingTo(
                Quantity.getAmountInBytes(pod.container.getResources().getRequests().get("cpu")));
    }

    private static long jvmSize(List<String> command, String prefix) {
        String v = command.stream().filter(a -> a.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + prefix)).substring(prefix.length()).toLowerCase();
        long n = Long.parseLong(v.replaceAll("[kmg]$", ""));
        return switch (v.charAt(v.length() - 1)) {
            case 'k' -> n << 10;
            case 'm' -> n << 20;
            case 'g' -> n << 30;
            default -> n;
        };
    }

    private static long bytes(Quantity q) {
        return Quantity.getAmountInBytes(q).longValueExact();
    }

    /** The password is never in the ConfigMap nor in a literal env value: from the Secret, by name. */
    @Test
    void theRedisPasswordComesFromASecret() throws IOException {
        String configYaml = pod.configYaml();
        JsonNode redis = KubernetesObjects.STRICT.readTree(configYaml).path("coordination").path("redis");
        String passwordEnv = redis.path("password_env").asString("");
        assertThat(passwordEnv).isNotBlank();
        assertThat(redis.path("url").asString("")).matches("rediss?://[^@/]+(/\\d+)?");
        EnvVar var = pod.container.getEnv().stream().filter(e -> e.getName().equals(passwordEnv)).findFirst()
                .orElseThrow(() -> new AssertionError("the Deployment does not set " + passwordEnv));
        assertThat(var.getValue()).as("no literal password").isNull();
        var ref = var.getValueFrom().getSecretKeyRef();
        assertThat(ref).isNotNull();
        assertThat(ref.getOptional()).as("a missing Secret stops the pod, not the budget").isNotEqualTo(Boolean.TRUE);
        String example = pod.secretValue(ref.getName(), ref.getKey());
        // nothing secret in any ConfigMap or literal env value, anywhere
        for (ConfigMap cm : objects.all(ConfigMap.class)) {
            for (String text : cm.getData().values()) {
                assertThat(text).doesNotContain(example).doesNotContainPattern("(?i)\\bpassword\\s*:");
            }
        }
        List<EnvVar> allEnv = new ArrayList<>(pod.container.getEnv());
        objects.all(StatefulSet.class).forEach(s -> s.getSpec().getTemplate().getSpec().getContainers()
                .forEach(c -> allEnv.addAll(c.getEnv() == null ? List.of() : c.getEnv())));
        for (EnvVar e : allEnv) {
            if (e.getName().matches("(?i).*(PASSWORD|TOKEN|SECRET|_KEY).*")) {
                assertThat(e.getValueFrom()).as("%s from a Secret", e.getName()).isNotNull();
                assertThat(e.getValueFrom().getSecretKeyRef()).as("%s from a Secret", e.getName()).isNotNull();
            }
        }
        // the example Secrets are examples: not in any kustomization, and marked so
        for (Path k : KubernetesObjects.kustomizations(objects.dir)) {
            assertThat(KubernetesObjects.STRICT.readTree(Files.readString(k)).path("resources").toString())
                    .doesNotContain("secrets.example.yaml");
        }
        assertThat(objects.fileOf(objects.one(io.fabric8.kubernetes.api.model.Secret.class, ref.getName())).getFileName())
                .hasToString("secrets.example.yaml");
    }

    /** Worker discovery's RBAC: the gateway's ServiceAccount may read and watch pods, and nothing else. */
    @Test
    void theDiscoveryRbacGrantsPodReadsAndWatchesToTheGatewaysServiceAccountOnly() {
        io.fabric8.kubernetes.api.model.rbac.Role role = objects.one(io.fabric8.kubernetes.api.model.rbac.Role.class,
                "sluice-gateway-discovery");
        assertThat(role.getRules()).hasSize(1);
        assertThat(role.getRules().get(0).getApiGroups()).containsExactly("");
        assertThat(role.getRules().get(0).getResources()).containsExactly("pods");
        assertThat(role.getRules().get(0).getVerbs()).containsExactlyInAnyOrder("get", "list", "watch");
        io.fabric8.kubernetes.api.model.rbac.RoleBinding binding = objects.one(
                io.fabric8.kubernetes.api.model.rbac.RoleBinding.class, "sluice-gateway-discovery");
        assertThat(binding.getRoleRef().getName()).isEqualTo(role.getMetadata().getName());
        assertThat(binding.getSubjects()).singleElement().satisfies(s -> {
            assertThat(s.getKind()).isEqualTo("ServiceAccount");
            assertThat(s.getName()).isEqualTo("sluice-gateway");
        });
        objects.one(io.fabric8.kubernetes.api.model.ServiceAccount.class, "sluice-gateway");
    }

    /** The in-cluster Valkey: one pod, nothing on disk, the gateways' password, reachable by the configured name. */
    @Test
    void theInClusterValkeyIsOneUnpersistedPodBehindTheConfiguredName() throws IOException {
        StatefulSet valkey = objects.one(StatefulSet.class, "sluice-valkey");
        assertThat(valkey.getSpec().getReplicas()).isEqualTo(1);
        assertThat(valkey.getSpec().getVolumeClaimTemplates()).isNullOrEmpty();
        Container c = valkey.getSpec().getTemplate().getSpec().getContainers().get(0);
        assertThat(c.getImage()).startsWith("valkey/valkey:");
        String command = String.join(" ", c.getCommand()) + " " + String.join(" ", c.getArgs() == null ? List.of() : c.getArgs());
        assertThat(command).contains("--save \"\"", "--appendonly no").doesNotContain("requirepass $(")
                .doesNotContain("--requirepass");
        // the password: the gateways' Secret and key, mounted as a file (ValkeyArgumentsTest runs what reads it),
        // never in an environment variable, an argument or the spec
        assertThat(c.getEnv()).as("no environment: nothing secret in it").isNullOrEmpty();
        var gatewayPassword = pod.container.getEnv().stream().filter(e -> e.getName().equals("SLUICE_REDIS_PASSWORD"))
                .findFirst().orElseThrow().getValueFrom().getSecretKeyRef();
        PodSpec spec = valkey.getSpec().getTemplate().getSpec();
        var secretVolume = spec.getVolumes().stream().filter(v -> v.getSecret() != null).findFirst().orElseThrow().getSecret();
        assertThat(secretVolume.getSecretName()).isEqualTo(gatewayPassword.getName());
        assertThat(secretVolume.getItems()).extracting(i -> i.getKey()).containsExactly(gatewayPassword.getKey());
        assertThat(secretVolume.getDefaultMode() & 0007).as("not world-readable").isZero();
        assertThat(command).doesNotContain(pod.secretValue(gatewayPassword.getName(), gatewayPassword.getKey()));
        // the rendered config file lives in memory, not on the node's disk
        assertThat(spec.getVolumes()).anySatisfy(v -> assertThat(v.getEmptyDir() == null ? null
                : v.getEmptyDir().getMedium()).isEqualTo("Memory"));
        assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
        assertThat(valkey.getSpec().getTemplate().getSpec().getSecurityContext().getRunAsNonRoot()).isTrue();

        Service governing = objects.one(Service.class, valkey.getSpec().getServiceName());
        assertThat(governing.getSpec().getClusterIP()).isEqualTo("None");
        assertThat(LabelSelectors.matches(governing.getSpec().getSelector(),
                valkey.getSpec().getTemplate().getMetadata().getLabels())).isTrue();
        // the ConfigMap's URL names this Service and its port
        String url = KubernetesObjects.STRICT.readTree(pod.configYaml()).path("coordination").path("redis").path("url").asString("");
        java.net.URI uri = java.net.URI.create(url);
        assertThat(uri.getHost()).isEqualTo(governing.getMetadata().getName());
        assertThat(governing.getSpec().getPorts()).extracting(ServicePort::getPort).contains(uri.getPort());
    }

    /** Valkey admits the gateway pods, on its port, and nothing else: not the rest of the cluster, nor itself. */
    @Test
    void onlyTheGatewayPodsReachValkey() {
        StatefulSet valkey = objects.one(StatefulSet.class, "sluice-valkey");
        Map<String, String> valkeyLabels = valkey.getSpec().getTemplate().getMetadata().getLabels();
        Map<String, String> gatewayLabels = pod.deployment.getSpec().getTemplate().getMetadata().getLabels();
        List<NetworkPolicy> guarding = objects.all(NetworkPolicy.class).stream()
                .filter(p -> LabelSelectors.matches(p.getSpec().getPodSelector(), valkeyLabels)).toList();
        assertThat(guarding).as("one NetworkPolicy selects the Valkey pods").hasSize(1);
        NetworkPolicy policy = guarding.get(0);
        assertThat(LabelSelectors.matches(policy.getSpec().getPodSelector(), gatewayLabels)).isFalse();
        assertThat(policy.getSpec().getPolicyTypes()).contains("Ingress");
        Container c = valkey.getSpec().getTemplate().getSpec().getContainers().get(0);
        int redisPort = c.getPorts().stream().filter(p -> "redis".equals(p.getName())).findFirst().orElseThrow()
                .getContainerPort();
        assertThat(policy.getSpec().getIngress()).isNotEmpty().allSatisfy(rule -> {
            assertThat(rule.getFrom()).as("an empty from admits everyone").isNotEmpty();
            assertThat(rule.getFrom()).allSatisfy(peer -> {
                assertThat(peer.getNamespaceSelector()).as("this namespace only").isNull();
                assertThat(peer.getIpBlock()).isNull();
                assertThat(LabelSelectors.matches(peer.getPodSelector(), gatewayLabels)).as("the gateway pods").isTrue();
                // a pod of the same project that is not a gateway (Valkey itself, say) is not admitted
                assertThat(LabelSelectors.matches(peer.getPodSelector(), valkeyLabels)).isFalse();
                assertThat(LabelSelectors.matches(peer.getPodSelector(), Map.of("app.kubernetes.io/part-of", "sluice")))
                        .isFalse();
            });
            assertThat(rule.getPorts()).as("the Valkey port only").isNotEmpty().allSatisfy(p -> {
                int port = p.getPort().getIntVal() != null ? p.getPort().getIntVal() : c.getPorts().stream()
                        .filter(cp -> p.getPort().getStrVal().equals(cp.getName())).findFirst().orElseThrow()
                        .getContainerPort();
                assertThat(port).isEqualTo(redisPort);
                assertThat(p.getProtocol()).isEqualTo("TCP");
            });
        });
        // and the Service the gateways dial sends them to that port
        Service governing = objects.one(Service.class, valkey.getSpec().getServiceName());
        assertThat(governing.getSpec().getPorts()).extracting(sp -> sp.getTargetPort().getStrVal() != null
                ? sp.getTargetPort().getStrVal() : String.valueOf(sp.getTargetPort().getIntVal())).containsAnyOf("redis",
                String.valueOf(redisPort));
    }
}
