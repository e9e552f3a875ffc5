package dev.sluice.gateway.deploy;

import com.fasterxml.jackson.annotation.JsonAnySetter;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.cfg.MapperConfig;
import tools.jackson.databind.introspect.Annotated;
import tools.jackson.databind.introspect.JacksonAnnotationIntrospector;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * Every object of deploy/kubernetes/, parsed into fabric8's typed Kubernetes model, strictly: fabric8's
 * classes keep unknown fields in an {@code additionalProperties} map ({@link JsonAnySetter}), so that a
 * typo such as {@code terminationGracePeriodSecond} would parse and then be ignored by the API server's
 * client-side apply as much as by this test. The mapper here turns that catch-all off, so an unknown
 * field fails the parse naming its path, as {@code kubectl apply --validate=strict} would.
 */
final class KubernetesObjects {
    /** The kinds the manifests may hold, by {@code apiVersion} and {@code kind}; anything else fails. */
    static final Map<String, Class<? extends HasMetadata>> KINDS = Map.ofEntries(
            Map.entry("v1/ConfigMap", ConfigMap.class),
            Map.entry("v1/Secret", Secret.class),
            Map.entry("v1/Service", Service.class),
            Map.entry("v1/ServiceAccount", io.fabric8.kubernetes.api.model.ServiceAccount.class),
            Map.entry("apps/v1/Deployment", Deployment.class),
            Map.entry("apps/v1/StatefulSet", StatefulSet.class),
            Map.entry("policy/v1/PodDisruptionBudget", PodDisruptionBudget.class),
            Map.entry("networking.k8s.io/v1/NetworkPolicy", NetworkPolicy.class),
            Map.entry("rbac.authorization.k8s.io/v1/Role", io.fabric8.kubernetes.api.model.rbac.Role.class),
            Map.entry("rbac.authorization.k8s.io/v1/RoleBinding", io.fabric8.kubernetes.api.model.rbac.RoleBinding.class),
            Map.entry("monitoring.coreos.com/v1/ServiceMonitor", ServiceMonitor.class));

    static final YAMLMapper STRICT = YAMLMapper.builder()
            .annotationIntrospector(new JacksonAnnotationIntrospector() {
                @Override
                public Boolean hasAnySetter(MapperConfig<?> config, Annotated a) {
                    return null; // no catch-all: unknown fields are errors
                }
            })
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    /** One object and the file it came from. */
    record Parsed(Path file, HasMetadata object) {
    }

    final Path dir;
    final List<Parsed> all;

    private KubernetesObjects(Path dir, List<Parsed> all) {
        this.dir = dir;
        this.all = List.copyOf(all);
    }

    /** The repository's deploy/kubernetes/. */
    static Path directory() {
        for (Path p = Path.of(System.getProperty("user.dir")).toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("deploy/kubernetes/kustomization.yaml"))) {
                return p.resolve("deploy/kubernetes");
            }
        }
        throw new IllegalStateException("no deploy/kubernetes/kustomization.yaml above " + System.getProperty("user.dir"));
    }

    /** Every {@code *.yaml} under the directory that is not a kustomization (kustomize's own file). */
    static List<Path> manifestFiles(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".yaml"))
                    .filter(f -> !f.getFileName().toString().equals("kustomization.yaml"))
                    .sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Path> kustomizations(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(f -> f.getFileName().toString().equals("kustomization.yaml")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static KubernetesObjects load() throws IOException {
        Path dir = directory();
        List<Parsed> out = new ArrayList<>();
        for (Path file : manifestFiles(dir)) {
            for (HasMetadata o : parse(Files.readString(file), dir.relativize(file).toString())) {
                out.add(new Parsed(file, o));
            }
        }
        return new KubernetesObjects(dir, out);
    }

    /** The documents of one YAML stream, each into the class of its apiVersion and kind. */
    static List<HasMetadata> parse(String yaml, String source) {
        List<HasMetadata> out = new ArrayList<>();
        for (JsonNode doc : STRICT.readerFor(JsonNode.class).<JsonNode>readValues(yaml).readAll()) {
            if (doc == null || doc.isNull() || doc.isMissingNode()) {
                continue; // an empty document (a trailing ---)
            }
            String key = doc.path("apiVersion").asString("") + "/" + doc.path("kind").asString("");
            Class<? extends HasMetadata> type = KINDS.get(key);
            if (type == null) {
                throw new IllegalArgumentException(source + ": " + key + " (expected one of " + KINDS.keySet() + ")");
            }
            try {
                out.add(STRICT.treeToValue(doc, type));
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(source + ": " + key + ": " + e.getMessage(), e);
            }
        }
        return out;
    }

    <T extends HasMetadata> List<T> all(Class<T> type) {
        return all.stream().map(Parsed::object).filter(type::isInstance).map(type::cast).toList();
    }

    <T extends HasMetadata> T one(Class<T> type, String name) {
        List<T> found = all(type).stream().filter(o -> name.equals(o.getMetadata().getName())).toList();
        if (found.size() != 1) {
            throw new AssertionError(found.size() + " " + type.getSimpleName() + " named " + name + " (expected: one)");
        }
        return found.get(0);
    }

    Path fileOf(HasMetadata object) {
        return all.stream().filter(p -> p.object() == object).findFirst().orElseThrow().file();
    }
}
