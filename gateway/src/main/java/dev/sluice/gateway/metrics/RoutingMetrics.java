package dev.sluice.gateway.metrics;

import dev.sluice.gateway.routing.RoutingPolicies;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The routing policies' meters: {@code sluice_routing_decisions_total{role,policy,reason}} (why
 * each worker was picked: prefix_hit, prefix_miss, balance_override, least_load, ...) and
 * {@code sluice_routing_tree_size{role,worker}} (prompt characters the cache_aware tree credits a
 * worker with; 0 under other policies). Counters exist at 0 from {@link #bind} on, so rate() and
 * dashboards see the first decision.
 */
public final class RoutingMetrics {
    static final String DECISIONS = "sluice.routing.decisions";
    static final String TREE_SIZE = "sluice.routing.tree.size";
    private static final String DECISIONS_HELP =
            "routing decisions by role, policy and reason (prefix_hit, prefix_miss, balance_override, least_load, power_of_two, round_robin)";
    private static final String TREE_SIZE_HELP =
            "prompt characters the cache_aware policy believes the worker holds in its prefix cache (0 under other policies)";

    private final MeterRegistry registry;
    private final String pool;
    /** Per role (by ordinal): the policy in use and its counters; swapped whole on a reload. */
    private final AtomicReferenceArray<Bound> bound = new AtomicReferenceArray<>(WorkerRole.values().length);

    public RoutingMetrics(MeterRegistry registry) {
        this(registry, null);
    }

    /** The routing meters of {@code pool} (each carries {@code pool="<name>"}; none when {@code pool} is null). */
    public RoutingMetrics(MeterRegistry registry, String pool) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.pool = pool;
    }

    /**
     * Exports one role's meters: a decisions counter at 0 for every reason {@code policy} can give,
     * and the tree-size gauge of each worker. Call again with the new policy after a reload.
     */
    public void bind(WorkerRole role, RoutingPolicy policy, List<Worker> workers) {
        bound.set(role.ordinal(), counters(role, policy));
        for (Worker w : workers) {
            // registered once per (role, worker); it reads whichever policy is bound at scrape time
            Gauge.builder(TREE_SIZE, this, m -> m.stateSize(role, w)).description(TREE_SIZE_HELP)
                    .tags("role", role.label(), "worker", w.name()).strongReference(true).register(registry);
        }
    }

    /** Counts one decision. Called under the admission lock: an array scan, no allocation, no map lookup. */
    public void decided(WorkerRole role, RoutingPolicy policy, String reason) {
        Bound b = bound.get(role.ordinal());
        if (b == null || b.policy != policy) {
            b = counters(role, policy); // a policy nobody bound: register on first use
            bound.set(role.ordinal(), b);
        }
        b.counter(reason).increment();
    }

    private double stateSize(WorkerRole role, Worker w) {
        Bound b = bound.get(role.ordinal());
        return b == null ? 0 : b.policy.stateSize(w);
    }

    private Bound counters(WorkerRole role, RoutingPolicy policy) {
        List<String> reasons = RoutingPolicies.reasons(policy.name());
        Counter[] counters = new Counter[reasons.size()];
        for (int i = 0; i < counters.length; i++) {
            counters[i] = counter(role, policy, reasons.get(i));
        }
        return new Bound(role, policy, reasons.toArray(String[]::new), counters);
    }

    private Counter counter(WorkerRole role, RoutingPolicy policy, String reason) {
        return Counter.builder(DECISIONS).description(DECISIONS_HELP)
                .tags("role", role.label(), "policy", policy.name(), "reason", reason).tags(pool == null ? new String[0]
                        : new String[]{PoolLabels.TAG, pool}).register(registry);
    }

    /** The counters of one (role, policy), parallel to the reasons it can give. */
    private final class Bound {
        final WorkerRole role;
        final RoutingPolicy policy;
        final String[] reasons;
        final Counter[] counters;

        Bound(WorkerRole role, RoutingPolicy policy, String[] reasons, Counter[] counters) {
            this.role = role;
            this.policy = policy;
            this.reasons = reasons;
            this.counters = counters;
        }

        Counter counter(String reason) {
            for (int i = 0; i < reasons.length; i++) {
                if (reasons[i] == reason) { // reasons are constants: identity first, equals as a fallback
                    return counters[i];
                }
            }
            for (int i = 0; i < reasons.length; i++) {
                if (reasons[i].equals(reason)) {
                    return counters[i];
                }
            }
            return RoutingMetrics.this.counter(role, policy, reason); // unexpected reason: still counted (Micrometer dedups)
        }
    }
}
