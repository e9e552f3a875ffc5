package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.WorkerRole;

/** Told of every routing decision that led to a dispatch (for {@code sluice_routing_decisions_total}). */
public interface RoutingObserver {
    void decided(WorkerRole role, RoutingPolicy policy, String reason);
}
