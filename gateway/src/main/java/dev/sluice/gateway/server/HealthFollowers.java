package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.pd.InFlight;
import dev.sluice.gateway.routing.WorkerState;
import java.util.Set;

/** What follows a worker's health change: the ejection counter, the live requests waiting on it, the queue. */
final class HealthFollowers {
    private HealthFollowers() {
    }

    static void attach(HealthTable health, GatewayMetrics metrics, Set<InFlight> live, AdmissionController admission) {
        health.addListener((w, from, to, cause) -> {
            if (cause != null) {
                metrics.workerEjection(w.role().label(), w.name(), cause.label());
            }
            if (to.state() == WorkerState.EJECTED) {
                // whoever waits on it for a first byte moves on now, not at its deadline (a draining
                // worker, removed by a reload, finishes what it has)
                live.forEach(ex -> ex.workerEjected(w));
            } else if (w.routable()) {
                admission.kick(); // queued requests may go now
            }
        });
    }
}
