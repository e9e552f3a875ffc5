package dev.sluice.gateway.coordination;

import java.util.List;
import java.util.Map;

/**
 * The coordination as /admin/state, status, /readiness and the metrics show it: an immutable
 * snapshot, replaced at every renewal.
 *
 * @param up           the last renewal reached Redis
 * @param mode         where this replica's limits come from now
 * @param replicas     live replicas at the last renewal (the N of budget / N)
 * @param grants       this replica's share per resource (by its Redis name)
 * @param peers        every live replica as Redis last saw it, this one included
 * @param lastLeaseAgeMillis since the last successful renewal was sent; -1 before the first
 */
public record CoordinationStatus(boolean up, Mode mode, String replicaId, long generation, int replicas,
                                 Map<String, Long> grants, List<LeaseReply.Peer> peers, long lastLeaseAgeMillis,
                                 String reason) {
    /** Where the limits come from. */
    public enum Mode {
        /** Not yet heard from Redis: no share yet (at most a lease time, then {@link #FALLBACK}). */
        JOINING("joining"),
        /** Shares leased from Redis, renewed. */
        LEASED("leased"),
        /** Redis unreachable, the last leases still valid: kept until they expire. */
        HELD("held"),
        /** Redis unreachable past the lease: each budget / N, N the last known replica count. */
        FALLBACK("fallback");

        private final String label;

        Mode(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }
}
