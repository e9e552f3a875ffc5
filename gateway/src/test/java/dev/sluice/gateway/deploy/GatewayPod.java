package dev.sluice.gateway.deploy;

import dev.sluice.gateway.config.ConfigOverrides;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The gateway container as the kubelet starts it: its environment (literal values, the example
 * Secrets' values, the downward API's pod name), its arguments with {@code $(VAR)} expanded, and the
 * configuration file it reads from the mounted ConfigMap.
 */
final class GatewayPod {
    /** What the downward API would give one pod of the Deployment. */
    static final String POD_NAME = "sluice-gateway-6c9f7d5b8-x2k4q";
    private static final Pattern VAR = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");

    final KubernetesObjects objects;
    final Deployment deployment;
    final PodSpec spec;
    final Container container;

    GatewayPod(KubernetesObjects objects) {
        this.objects = objects;
        this.deployment = objects.one(Deployment.class, "sluice-gateway");
        this.spec = deployment.getSpec().getTemplate().getSpec();
        this.container = spec.getContainers().stream().filter(c -> c.getName().equals("gateway")).findFirst()
                .orElseThrow(() -> new AssertionError("no container named gateway"));
    }

    /** The container's environment, in order, as the kubelet resolves it. */
    Map<String, String> env() {
        Map<String, String> env = new LinkedHashMap<>();
        for (EnvVar v : container.getEnv()) {
            if (v.getValueFrom() == null) {
                env.put(v.getName(), expand(v.getValue(), env));
            } else if (v.getValueFrom().getSecretKeyRef() != null) {
                var ref = v.getValueFrom().getSecretKeyRef();
                env.put(v.getName(), secretValue(ref.getName(), ref.getKey()));
            } else if (v.getValueFrom().getFieldRef() != null) {
                String field = v.getValueFrom().getFieldRef().getFieldPath();
                if (!field.equals("metadata.name")) {
                    throw new AssertionError("env " + v.getName() + ": fieldRef " + field + " (only metadata.name is simulated)");
                }
                env.put(v.getName(), POD_NAME);
            } else {
                throw new AssertionError("env " + v.getName() + ": a source this test does not simulate");
            }
        }
        return env;
    }

    /** A key of the example Secrets (secrets.example.yaml): what the operator creates before applying. */
    String secretValue(String name, String key) {
        Secret s = objects.one(Secret.class, name);
        String value = s.getStringData() == null ? null : s.getStringData().get(key);
        if (value == null && s.getData() != null && s.getData().get(key) != null) {
            value = new String(java.util.Base64.getDecoder().decode(s.getData().get(key)),
                    java.nio.charset.StandardCharsets.UTF_8);
        }
        if (value == null) {
            throw new AssertionError("Secret " + name + " has no key " + key);
        }
        return value;
    }

    /** Kubernetes' $(VAR) expansion: a defined variable is replaced, an undefined one left as written. */
    static String expand(String text, Map<String, String> env) {
        if (text == null) {
            return "";
        }
        Matcher m = VAR.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String v = env.get(m.group(1));
            m.appendReplacement(out, Matcher.quoteReplacement(v != null ? v : m.group()));
        }
        return m.appendTail(out).toString();
    }

    List<String> args(List<String> extra) {
        Map<String, String> env = env();
        List<String> out = new ArrayList<>();
        for (String a : container.getArgs()) {
            out.add(expand(a, env));
        }
        for (String a : extra) {
            out.add(expand(a, env));
        }
        return out;
    }

    /** The values of every {@code --set} in the arguments (and in {@code extra}, an overlay's). */
    List<String> sets(List<String> extra) {
        List<String> args = args(extra);
        List<String> sets = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            if (args.get(i).equals("--set") && i + 1 < args.size()) {
                sets.add(args.get(++i));
            } else if (args.get(i).startsWith("--set=")) {
                sets.add(args.get(i).substring("--set=".length()));
            }
        }
        return sets;
    }

    /** The overrides {@code serve} builds: the pod's environment and its {@code --set}s. */
    ConfigOverrides overrides(List<String> extraArgs, List<String> extraSets) {
        List<String> sets = new ArrayList<>(sets(extraArgs));
        sets.addAll(extraSets);
        return ConfigOverrides.of(env(), sets);
    }

    /** The path after {@code --config}. */
    Path configPath() {
        List<String> args = container.getArgs();
        int i = args.indexOf("--config");
        if (i < 0 || i + 1 >= args.size()) {
            throw new AssertionError("no --config in " + args);
        }
        return Path.of(args.get(i + 1));
    }

    /** The mount that holds the config file's directory. */
    VolumeMount configMount() {
        String dir = configPath().getParent().toString();
        return container.getVolumeMounts().stream().filter(m -> m.getMountPath().equals(dir)).findFirst()
                .orElseThrow(() -> new AssertionError("nothing mounted at " + dir));
    }

    Volume volume(String name) {
        return spec.getVolumes().stream().filter(v -> v.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no volume " + name));
    }

    /** The ConfigMap mounted where --config points. */
    ConfigMap configMap() {
        Volume v = volume(configMount().getName());
        if (v.getConfigMap() == null) {
            throw new AssertionError("volume " + v.getName() + " is not a ConfigMap");
        }
        return objects.one(ConfigMap.class, v.getConfigMap().getName());
    }

    /** The gateway.yaml the pod reads. */
    String configYaml() {
        String key = configPath().getFileName().toString();
        String yaml = configMap().getData().get(key);
        if (yaml == null) {
            throw new AssertionError("ConfigMap " + configMap().getMetadata().getName() + " has no key " + key);
        }
        return yaml;
    }

    /** A container port by its number or name, as probes and Services name them. */
    int containerPort(io.fabric8.kubernetes.api.model.IntOrString port) {
        if (port.getIntVal() != null) {
            return port.getIntVal();
        }
        return container.getPorts().stream().filter(p -> port.getStrVal().equals(p.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("no container port named " + port.getStrVal()))
                .getContainerPort();
    }
}
