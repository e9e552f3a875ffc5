package dev.sluice.gateway.discovery;

import dev.sluice.gateway.config.DiscoveryConfig.Kubernetes;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.Secret;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A role's workers from the Kubernetes API: the pods of a namespace that match a label selector,
 * watched with a fabric8 informer (a list, then a watch; a dropped watch is re-established and the
 * list read again by the informer, which reports what changed meanwhile). Only Ready pods that are
 * not terminating count ({@link PodEndpoints}). The informer's thread calls the sink.
 */
public final class KubernetesEndpointSource implements EndpointSource {
    private static final Logger log = LoggerFactory.getLogger(KubernetesEndpointSource.class);

    private final String role;
    private final Kubernetes config;
    private final boolean prefill;
    private final Optional<Secret> authorization;
    private final KubernetesClient client;
    private final boolean ownsClient;
    /** Pods by namespace/name, as the informer last reported them: touched only by the informer's thread. */
    private final Map<String, Pod> pods = new LinkedHashMap<>();
    private final Set<String> warnedNoPort = new LinkedHashSet<>();
    private SharedIndexInformer<Pod> informer;
    private List<WorkerEndpoint> last;

    public KubernetesEndpointSource(String role, Kubernetes config, Optional<Secret> authorization,
                                    KubernetesClient client, boolean ownsClient) {
        this.role = role;
        this.config = config;
        this.prefill = role.equals("prefill");
        this.authorization = authorization;
        this.client = client;
        this.ownsClient = ownsClient;
    }

    @Override
    public WorkerSource kind() {
        return WorkerSource.KUBERNETES;
    }

    /** The namespace watched: the configured one, else the client's (the service account's), else default. */
    String namespace() {
        if (!config.namespace().isEmpty()) {
            return config.namespace();
        }
        String own = client.getNamespace();
        return own == null || own.isEmpty() ? "default" : own;
    }

    @Override
    public synchronized void start(Consumer<List<WorkerEndpoint>> sink) {
        String ns = namespace();
        log.info("kubernetes discovery watching role={} namespace={} selector={}", role, ns, config.selector());
        // not inform(): that blocks until the first list and throws when the API server cannot be reached; the
        // gateway starts without it and the informer keeps trying (the exception handler below)
        informer = client.pods().inNamespace(ns).withLabels(config.selector()).runnableInformer(0);
        informer.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod p) {
                changed(p, false, sink);
            }

            @Override
            public void onUpdate(Pod before, Pod p) {
                changed(p, false, sink);
            }

            @Override
            public void onDelete(Pod p, boolean finalStateUnknown) {
                changed(p, true, sink);
            }
        });
        informer.exceptionHandler((started, t) -> {
            log.warn("kubernetes discovery cannot list or watch, retrying role={} namespace={} started={} error=\"{}\" "
                    + "(the last good set stays)", role, ns, started, t.toString());
            return true;
        });
        informer.start();
        informer.stopped().whenComplete((v, e) -> {
            if (e != null) {
                log.error("kubernetes discovery stopped role={} namespace={} (the last good set stays): {}", role, ns,
                        e.toString());
            }
        });
    }

    /**
     * On the informer's one thread (it calls its handler serially): not under this object's lock, since
     * the sink takes the directory's, which a reload holds while it closes this source.
     */
    private void changed(Pod p, boolean deleted, Consumer<List<WorkerEndpoint>> sink) {
        // keyed as the informer's own store keys: a pod is its namespace and name
        String key = p.getMetadata().getNamespace() + "/" + p.getMetadata().getName();
        if (deleted) {
            pods.remove(key);
        } else {
            pods.put(key, p);
        }
        List<WorkerEndpoint> now = pods.values().stream().map(this::endpoint).flatMap(Optional::stream).distinct()
                .toList();
        if (!now.equals(last)) {
            last = now;
            sink.accept(now);
        }
    }

    private Optional<WorkerEndpoint> endpoint(Pod p) {
        Optional<WorkerEndpoint> e = PodEndpoints.of(p, config, prefill, authorization);
        if (e.isEmpty() && PodEndpoints.serving(p)
                && warnedNoPort.add(p.getMetadata().getNamespace() + "/" + p.getMetadata().getName())) {
            log.warn("kubernetes discovery pod names no port role={} pod={} expected=\"a container port named {} or "
                    + "the annotation {}\"", role, p.getMetadata().getName(), config.portName(),
                    Kubernetes.PORT_ANNOTATION);
        }
        return e;
    }

    /**
     * Stops the watch off the caller's thread: the caller may hold the directory's lock, which the
     * informer's thread may be waiting for with a last event (ignored once this source is replaced).
     */
    @Override
    public synchronized void close() {
        SharedIndexInformer<Pod> inf = informer;
        informer = null;
        Thread stopper = new Thread(() -> {
            if (inf != null) {
                inf.close();
            }
            if (ownsClient) {
                client.close();
            }
        }, "sluice-discovery-stop-" + role);
        stopper.setDaemon(true);
        stopper.start();
    }
}
