package dev.sluice.gateway.discovery;

import dev.sluice.gateway.config.DiscoveryConfig.Kubernetes;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.Secret;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import java.util.Map;
import java.util.Optional;

/** What a pod is to the gateway: a worker endpoint when it is Ready, not terminating and names its port. */
final class PodEndpoints {
    private PodEndpoints() {
    }

    /** Ready (the kubelet's Ready condition is True), not being deleted, with an IP. */
    static boolean serving(Pod p) {
        if (p.getMetadata() == null || p.getMetadata().getDeletionTimestamp() != null || p.getStatus() == null) {
            return false;
        }
        String ip = p.getStatus().getPodIP();
        if (ip == null || ip.isEmpty()) {
            return false;
        }
        if (p.getStatus().getConditions() == null) {
            return false;
        }
        for (PodCondition c : p.getStatus().getConditions()) {
            if ("Ready".equals(c.getType())) {
                return "True".equals(c.getStatus());
            }
        }
        return false;
    }

    /** The container port called {@code name}, else the annotation, else empty. */
    static Optional<Integer> port(Pod p, String name, String annotation) {
        if (p.getSpec() != null && p.getSpec().getContainers() != null) {
            for (Container c : p.getSpec().getContainers()) {
                if (c.getPorts() == null) {
                    continue;
                }
                for (ContainerPort cp : c.getPorts()) {
                    if (name.equals(cp.getName()) && cp.getContainerPort() != null) {
                        return Optional.of(cp.getContainerPort());
                    }
                }
            }
        }
        Map<String, String> annotations = p.getMetadata().getAnnotations();
        String v = annotations == null ? null : annotations.get(annotation);
        if (v != null) {
            try {
                int port = Integer.parseInt(v.trim());
                if (port >= 1 && port <= 65535) {
                    return Optional.of(port);
                }
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    /** The pod's endpoint, or empty when it does not serve or names no port (then {@code why} says which). */
    static Optional<WorkerEndpoint> of(Pod p, Kubernetes config, boolean prefill, Optional<Secret> auth) {
        if (!serving(p)) {
            return Optional.empty();
        }
        Optional<Integer> port = port(p, config.portName(), Kubernetes.PORT_ANNOTATION);
        if (port.isEmpty()) {
            return Optional.empty();
        }
        Integer bootstrap = prefill ? port(p, config.bootstrapPortName(), Kubernetes.BOOTSTRAP_PORT_ANNOTATION)
                .orElse(null) : null;
        String ip = p.getStatus().getPodIP();
        String host = ip.contains(":") ? "[" + ip + "]" : ip;
        return Optional.of(WorkerEndpoint.of(config.scheme() + "://" + host + ":" + port.get(), bootstrap, auth));
    }
}
