package dev.sluice.gateway.server;

import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import java.util.List;

/**
 * One model pool's part of {@code /readiness} with {@code pools:}: whether its start-up is over (every
 * worker has its first verdict, its fleet lease settled) and whether it can serve now (a usable worker of
 * each role), with the reason in words.
 *
 * <p>The replica's rule ({@link #replicaReady}): not draining, every pool's start-up over (the first verdicts
 * are waited for once, at start-up: {@link ModelPool#firstVerdicts}), and at least one
 * pool able to serve. A load balancer in front of several replicas then keeps a replica in rotation while
 * one of its pools has no worker (that pool's requests get the gateway's own 503 with a reason, as they
 * would from every replica), but not before each pool has had its chance to come up: a replica that
 * answered ready while one pool was still starting would take that pool's traffic only to refuse it.
 */
record PoolReadiness(String name, boolean started, boolean canServe, String reason) {

    static PoolReadiness of(ModelPool pool) {
        List<Worker> all = pool.workers.all();
        long awaiting = all.stream().filter(w -> w.status().awaitingFirstCheck()).count();
        boolean leased = pool.coordination().map(CoordinationStatus::serving).orElse(true);
        boolean canServe = pool.workers.ready();
        String reason;
        if (awaiting > 0) {
            reason = awaiting + " of " + all.size() + " workers awaiting their first health check";
        } else if (!pool.calibrations.settled()) {
            reason = ReadinessReport.CALIBRATING;
        } else if (!leased) {
            reason = "coordination: no correct budget yet (" + pool.coordination().map(CoordinationStatus::reason)
                    .orElse("") + ")";
        } else if (all.isEmpty()) {
            reason = "no workers";
        } else if (!canServe) {
            reason = missingRoles(pool);
        } else {
            reason = "serving";
        }
        return new PoolReadiness(pool.name, pool.firstVerdicts(awaiting == 0) && leased
                && pool.calibrations.settled(), canServe && leased, reason);
    }

    /** Which role has no usable worker and the states of its workers, e.g. "no usable decode worker (ejected)". */
    private static String missingRoles(ModelPool pool) {
        StringBuilder b = new StringBuilder();
        List<WorkerRole> roles = pool.workers.unified() ? List.of(WorkerRole.UNIFIED)
                : List.of(WorkerRole.PREFILL, WorkerRole.DECODE);
        for (WorkerRole role : roles) {
            List<Worker> of = pool.workers.all().stream().filter(w -> w.role() == role).toList();
            if (of.stream().noneMatch(Worker::isAvailable)) {
                b.append(b.length() == 0 ? "" : "; ").append("no usable ").append(role.label()).append(" worker (")
                        .append(of.isEmpty() ? "none configured" : String.join(", ", of.stream()
                                .map(w -> w.identityPending() ? "identity unconfirmed" : w.state().label())
                                .distinct().toList()))
                        .append(')');
            }
        }
        return b.length() == 0 ? "no usable worker of a role" : b.toString();
    }

    /** The replica's verdict from its pools': see the class comment. */
    static boolean replicaReady(List<PoolReadiness> pools, boolean draining) {
        return !draining && pools.stream().allMatch(PoolReadiness::started)
                && pools.stream().anyMatch(PoolReadiness::canServe);
    }
}
