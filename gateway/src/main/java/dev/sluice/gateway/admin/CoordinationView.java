package dev.sluice.gateway.admin;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.coordination.LeaseReply;

/**
 * {@code /admin/state} → {@code coordination}: whether Redis is reached, where the limits come from
 * ({@code leased}, {@code held}, {@code fallback}, {@code joining}), this replica's shares, and every
 * live peer with its leases (grant, usage, demand per resource) and when Redis last heard of it.
 */
final class CoordinationView {
    private CoordinationView() {
    }

    static void render(CoordinationStatus c, ObjectNode o) {
        o.put("up", c.up()).put("mode", c.mode().label()).put("fleet", c.fleet()).put("serving", c.serving())
                .put("replica_id", c.replicaId())
                .put("generation", c.generation()).put("replicas", c.replicas())
                .put("last_lease_age_ms", c.lastLeaseAgeMillis()).put("renewal_errors", c.renewalErrors())
                .put("late_replies", c.lateReplies());
        if (!c.reason().isEmpty()) {
            o.put("reason", c.reason());
        }
        ObjectNode grants = o.putObject("grants");
        c.grants().forEach(grants::put);
        ArrayNode peers = o.putArray("peers");
        long newest = c.peers().stream().mapToLong(LeaseReply.Peer::seenMillis).max().orElse(0);
        for (LeaseReply.Peer p : c.peers()) {
            ObjectNode peer = peers.addObject();
            peer.put("replica_id", p.replicaId()).put("generation", p.generation()).put("address", p.address())
                    .put("self", p.replicaId().equals(c.replicaId()) && p.generation() == c.generation())
                    .put("last_seen_ms_ago", newest - p.seenMillis()); // by Redis's clock, at the last renewal
            ObjectNode leases = peer.putObject("leases");
            new java.util.TreeMap<>(p.leases()).forEach((name, l) -> leases.putObject(name).put("grant", l.grant())
                    .put("usage", l.usage()).put("demand", l.demand()).put("capacity", l.capacity()));
            // the share guard's figures it reported: prompt tokens routed to each prefill lately (docs/routing.md)
            ObjectNode routed = peer.putObject("routed_tokens_lately");
            new java.util.TreeMap<>(p.routed()).forEach((url, v) -> routed.put(url, Math.round(v)));
        }
    }
}
