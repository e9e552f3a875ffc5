package dev.sluice.gateway.coordination;

import dev.sluice.gateway.routing.FleetRoutedLoad;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** What the other replicas routed to each worker, from a lease answer (the fleet's share figures, docs/routing.md). */
final class PeerLoad {
    private PeerLoad() {
    }

    /**
     * The other members' figures summed per worker, each aged by how long before this answer Redis
     * heard it (its {@code seen}, on Redis's clock like the answer's {@code now}).
     */
    static Map<String, Double> summed(LeaseReply reply, String ownId, long ownGeneration, FleetRoutedLoad routed) {
        Map<String, Double> sum = new HashMap<>();
        for (LeaseReply.Peer p : reply.members()) {
            if (p.generation() == ownGeneration && p.replicaId().equals(ownId)) {
                continue;
            }
            long ageNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0, reply.serverMillis() - p.seenMillis()));
            p.routed().forEach((url, v) -> sum.merge(url, routed.aged(v, ageNanos), Double::sum));
        }
        return sum;
    }
}
