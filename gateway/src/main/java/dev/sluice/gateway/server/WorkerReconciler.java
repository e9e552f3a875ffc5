package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.GatewayConfig.TelemetryConfig;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.metrics.RoutingMetrics;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.util.concurrent.EventExecutor;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker lists of a live reload: one place that adds, drains and retires workers, in the
 * order that keeps every reader consistent (a new worker's health, window and metrics exist
 * before routing can see it; a retired one leaves the lists before its state goes).
 */
final class WorkerReconciler implements dev.sluice.gateway.discovery.WorkerDirectory.WorkerLists {
    private static final Logger log = LoggerFactory.getLogger(WorkerReconciler.class);

    private final WorkerSet workers;
    private final HealthTable health;
    private final AdmissionController admission;
    private final GatewayMetrics metrics;
    private final RoutingMetrics routingMetrics;
    private final RoutingPolicy prefillPolicy;
    private final RoutingPolicy decodePolicy;
    private final UpstreamPool pool;
    private final Iterable<EventExecutor> loops;
    private final TelemetryConfig telemetry;
    private final Set<dev.sluice.gateway.pd.InFlight> live;
    private final String poolName; // the pool label of the workers it adds
    /** Workers a reload removed that still carry requests: retired (pool closed, state dropped) once idle. */
    private final Set<Worker> draining = ConcurrentHashMap.newKeySet();

    WorkerReconciler(WorkerSet workers, HealthTable health, AdmissionController admission, GatewayMetrics metrics,
                     RoutingMetrics routingMetrics, RoutingPolicy prefillPolicy, RoutingPolicy decodePolicy,
                     UpstreamPool pool, Iterable<EventExecutor> loops, TelemetryConfig telemetry,
                     Set<dev.sluice.gateway.pd.InFlight> live, String poolName) {
        this.live = live;
        this.poolName = poolName;
        this.workers = workers;
        this.health = health;
        this.admission = admission;
        this.metrics = metrics;
        this.routingMetrics = routingMetrics;
        this.prefillPolicy = prefillPolicy;
        this.decodePolicy = decodePolicy;
        this.pool = pool;
        this.loops = loops;
        this.telemetry = telemetry;
    }

    int draining() {
        return draining.size();
    }

    /**
     * A role's workers should now be {@code wanted} (from the directory: file, discovery, admin). A new
     * worker gets its health entry (ejected until its first active check passes), its admission window
     * and its metrics before routing can see it, and takes no request before its identity check passes;
     * a removed one drains (no new requests; those in flight finish) and is retired once idle; a
     * draining one that comes back is simply undrained.
     */
    @Override
    public synchronized void reconcile(WorkerRole role, List<GatewayConfig.WorkerEndpoint> wanted) {
        reconcileRole(role, wanted);
    }

    /** Deleted by the operator: the requests on it fail over (nothing sent yet) or stop on both halves. */
    @Override
    public boolean abortRequests(String name) {
        boolean found = false;
        for (Worker w : draining) {
            if (w.name().equals(name)) {
                found = true;
                log.info("worker deleted, stopping its requests role={} worker={} in_flight={}", w.role().label(),
                        w.name(), w.inflight());
                live.forEach(ex -> ex.workerRemoved(w));
            }
        }
        return found;
    }

    private void reconcileRole(WorkerRole role, List<GatewayConfig.WorkerEndpoint> wanted) {
        List<Worker> current = workers.role(role == WorkerRole.DECODE ? role : WorkerRole.PREFILL);
        for (Worker w : current) {
            GatewayConfig.WorkerEndpoint kept = wanted.stream().filter(e -> sameEndpoint(w, e)).findFirst().orElse(null);
            boolean keep = kept != null;
            if (keep && !kept.authorization().equals(w.authorization())) {
                w.rotateCredentials(kept); // workers.api_key_env changed: the next requests carry the new key
                log.info("worker credentials rotated by reload role={} worker={}", role.label(), w.name());
            }
            if (!keep && draining.add(w)) {
                health.draining(w, true);
                log.info("worker removed, draining role={} worker={} in_flight={}", role.label(), w.name(),
                        w.inflight());
            } else if (keep && draining.remove(w)) {
                health.draining(w, false);
                log.info("worker back role={} worker={}", role.label(), w.name());
            }
        }
        for (GatewayConfig.WorkerEndpoint e : wanted) {
            if (current.stream().noneMatch(w -> sameEndpoint(w, e))) {
                Worker w = new Worker(role, e);
                w.awaitIdentity();
                health.add(w);
                admission.addWorker(w);
                metrics.poolLabels().assign(w.name(), poolName);
                metrics.bindWorker(w, telemetry);
                for (FailureKind k : FailureKind.values()) {
                    metrics.preRegisterEjection(w.role().label(), w.name(), k.label());
                }
                for (String result : dev.sluice.gateway.health.ProbeOutcome.labels()) {
                    metrics.preRegisterStallProbe(w.role().label(), w.name(), result);
                }
                routingMetrics.bind(role, role == WorkerRole.DECODE ? decodePolicy : prefillPolicy, List.of(w));
                workers.add(w);
                log.info("worker added role={} worker={} (in rotation once its identity and health checks pass)",
                        role.label(), w.name());
            }
        }
    }

    private static boolean sameEndpoint(Worker w, GatewayConfig.WorkerEndpoint e) {
        return w.url().equals(e.url()) && java.util.Objects.equals(w.bootstrapPort(), e.bootstrapPort());
    }

    /**
     * Retires drained workers: out of the lists first (routing stops seeing them), then their state,
     * metrics and pool, and out of the draining set last, so that "none draining" means every trace
     * of a retired worker is gone (a test read the gauges between the two and found them).
     */
    synchronized void retireDrained() { // under the lock of reconcile: a worker wanted back is never retired
        java.util.Map<Worker, dev.sluice.gateway.admission.WorkerWindow> windows = null;
        for (Worker w : draining) {
            if (w.inflight() == 0) {
                // a stopped request gives its worker back before its exchange ends and releases its admission
                // window: retire only once the window is empty too, or that release finds no worker
                if (windows == null) {
                    windows = admission.snapshot().perWorker();
                }
                dev.sluice.gateway.admission.WorkerWindow window = windows.get(w);
                if (window != null && !window.idle()) {
                    continue;
                }
                workers.remove(w);
                admission.removeWorker(w);
                health.remove(w);
                metrics.unbindWorker(w);
                if (prefillPolicy instanceof dev.sluice.gateway.routing.CacheAwarePolicy ca) {
                    ca.forget(w);
                }
                pool.forget(w, loops);
                draining.remove(w);
                log.info("worker retired role={} worker={}", w.role().label(), w.name());
            }
        }
    }
}
