package dev.sluice.gateway.coordination;

import java.util.List;
import java.util.Map;

/**
 * The coordination as /admin/state, status, /readiness and the metrics show it: an immutable
 * snapshot, replaced at every renewal.
 *
 * @param up           the last renewal reached Redis
 * @param mode         where this replica's limits come from now
 * @param fleet        the fleet's name ({@code coordination.fleet}; empty: unnamed, the key {@code {sluice}:fleet})
 * @param serving      ready to take requests on a correct budget: its lease has settled (its grants reached the
 *                     script's targets, or a lease time passed since the first), or it runs on budget / N; false
 *                     while joining and once draining (docs/scale-out.md, "Readiness")
 * @param replicas     live replicas at the last renewal (the N of budget / N)
 * @param grants       this replica's share per resource (by its Redis name)
 * @param peers        every live replica as Redis last saw it, this one included
 * @param lastLeaseAgeMillis since the last successful renewal was sent; -1 before the first
 * @param renewalErrors renewals that failed inside this replica (an exception, not Redis's answer), since start
 * @param lateReplies  answers dropped because they came after the lease they granted had run out (a pause)
 */
public record CoordinationStatus(boolean up, Mode mode, String fleet, boolean serving, String replicaId,
                                 long generation, int replicas, Map<String, Long> grants,
                                 List<LeaseReply.Peer> peers, long lastLeaseAgeMillis, String reason,
                                 long renewalErrors, long lateReplies) {
    /** Where the limits come from. */
    public enum Mode {
        /** Not yet heard from Redis: no share yet (at most a lease time, then {@link #FALLBACK}). */
        JOINING("joining"),
        /** Shares leased from Redis, renewed. */
        LEASED("leased"),
        /** Redis unreachable, the last leases still valid: kept until they expire. */
        HELD("held"),
        /**
         * The lease ran out before an answer came (a pause, a partition): nothing is admitted on it
         * while a new renewal is asked for; then {@link #LEASED}, or {@link #FALLBACK} when Redis
         * does not answer.
         */
        LAPSED("lapsed"),
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

    /** This status, not serving: another model pool of the replica has no correct budget yet. */
    public CoordinationStatus notServing() {
        return new CoordinationStatus(up, mode, fleet, false, replicaId, generation, replicas, grants, peers,
                lastLeaseAgeMillis, serving ? "another pool has no budget yet" : reason, renewalErrors, lateReplies);
    }
}
