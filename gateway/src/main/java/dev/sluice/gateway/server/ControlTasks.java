package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.cacheview.KvEventSubscription;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.coordination.FleetLeases;
import dev.sluice.gateway.metrics.CacheViewMetrics;
import dev.sluice.gateway.metrics.CoordinationMetrics;
import dev.sluice.gateway.routing.WorkerSet;
import io.netty.util.concurrent.EventExecutor;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The periodic work of the control loop that is not a probe of its own: admission's expiry sweep and
 * queue updates, the retirement of drained workers, the KV event streams following the prefill set,
 * and the fleet leases. Each is one {@link dev.sluice.gateway.background.PeriodicTask}.
 */
final class ControlTasks {
    private static final Logger log = LoggerFactory.getLogger(ControlTasks.class);

    private ControlTasks() {
    }

    static void start(GatewayConfig config, BackgroundTasks background, EventExecutor control,
            AdmissionController admission, WorkerReconciler reconciler, WorkerSet workers,
            Optional<KvEventSubscription> kvEvents, Optional<CacheViewMetrics> kvMetrics,
            FleetLeases leases, CoordinationMetrics coordinationMetrics) throws InterruptedException {
        if (leases != null) {
            leases.start();
            background.every("coordination_share_gauges", control, Duration.ZERO,
                    config.coordination().get().renewInterval(), coordinationMetrics::bindShares);
            // serve with a share: the first grant is one round trip away; with Redis unreachable, the
            // replica starts on budget / 1 after a lease time (it knows no peers), and says so
            if (!leases.awaitFirstLease(config.coordination().get().leaseTtl().toMillis())) {
                log.warn("coordination no lease yet replica_id={} status={}", leases.status().replicaId(),
                        leases.status().mode().label());
            }
        }
        kvEvents.ifPresent(k -> {
            k.start();
            // workers a reload added or retired get or lose their view and streams (idempotent, cheap)
            background.every("kv_events_follow", control, Duration.ofMillis(200), () -> {
                k.follow(workers.prefill());
                kvMetrics.ifPresent(CacheViewMetrics::follow);
            });
        });
        // queued requests' deadlines: swept (and the queue re-judged) on the control loop, off the request loops
        background.every("admission_expiry", control, Duration.ofMillis(20), admission::expire);
        // where each queued request that asked for queue updates stands: one walk of the queue a second
        background.every("queue_updates", control, Duration.ofSeconds(1), admission::reportQueue);
        background.every("drained_worker_retire", control, Duration.ofMillis(100), reconciler::retireDrained);
    }
}
