package dev.sluice.gateway.metrics;

import dev.sluice.gateway.coordination.CoordinationStatus;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The fleet coordination's gauges: {@code sluice_coordination_up} (1: the last renewal reached
 * Redis), {@code sluice_coordination_replicas} (live replicas, the N of budget / N),
 * {@code sluice_coordination_fallback} (1: running on budget / N after the lease lapsed) and
 * {@code sluice_coordination_share{resource,worker}}, this replica's share of each budget;
 * {@code sluice_coordination_serving} (1: ready on a correct budget, the readiness condition),
 * {@code sluice_coordination_info{fleet,replica_id}} (always 1: which fleet this replica is in),
 * {@code sluice_coordination_renewal_errors_total} (renewals that failed inside this replica) and
 * {@code sluice_coordination_late_replies_total} (answers dropped for coming after their lease ran out).
 */
public final class CoordinationMetrics {
    private final MeterRegistry registry;
    private final Supplier<CoordinationStatus> status;
    private final Set<String> bound = ConcurrentHashMap.newKeySet();

    public CoordinationMetrics(MeterRegistry registry, Supplier<CoordinationStatus> status) {
        this.registry = registry;
        this.status = status;
        Gauge.builder("sluice.coordination.up", () -> status.get().up() ? 1 : 0)
                .description("1: this replica's last lease renewal reached Redis; 0: Redis unreachable").register(registry);
        Gauge.builder("sluice.coordination.fallback",
                        () -> status.get().mode() == CoordinationStatus.Mode.FALLBACK ? 1 : 0)
                .description("1: the leases lapsed with Redis unreachable; each budget / the last known replica count")
                .register(registry);
        Gauge.builder("sluice.coordination.replicas", () -> status.get().replicas())
                .description("live gateway replicas at the last renewal").register(registry);
        Gauge.builder("sluice.coordination.serving", () -> status.get().serving() ? 1 : 0)
                .description("1: serving on a correct budget (a settled lease, or budget / N); 0: joining or draining")
                .register(registry);
        CoordinationStatus first = status.get();
        Gauge.builder("sluice.coordination.info", () -> 1)
                .description("this replica's fleet (coordination.fleet; empty: unnamed) and replica id")
                .tag("fleet", first.fleet()).tag("replica_id", first.replicaId()).register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("sluice.coordination.renewal.errors", status,
                        s -> s.get().renewalErrors())
                .description("lease renewals that failed inside this replica (an exception; logged, tried again)")
                .register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("sluice.coordination.late.replies", status,
                        s -> s.get().lateReplies())
                .description("lease answers dropped: they came after the lease they granted had run out (a pause)")
                .register(registry);
        bindShares();
    }

    /** Registers a gauge for each resource not seen before (workers added by a reload); called at each scrape. */
    public void bindShares() {
        for (String name : status.get().grants().keySet()) {
            // tenants' rates are not gauges (tenants are unbounded over time): /admin/state shows them
            if (!name.startsWith("tenant_tokens|") && bound.add(name)) {
                int bar = name.indexOf('|');
                String resource = bar < 0 ? name : name.substring(0, bar);
                String worker = bar < 0 ? "" : name.substring(bar + 1);
                Gauge.builder("sluice.coordination.share", () -> status.get().grants().getOrDefault(name, 0L))
                        .description("this replica's share of a fleet budget (admission limit) now in force")
                        .tag("resource", resource).tag("worker", worker).register(registry);
            }
        }
    }
}
