package dev.sluice.gateway.routing;

import java.util.List;
import java.util.Objects;

/**
 * Picks a worker of one role for a request (YAML {@code routing.prefill.policy} /
 * {@code routing.decode.policy}). Admission calls it with the workers that may take the request
 * now; the windows stay the hard limit, the policy only chooses among them.
 *
 * <p>Called under the admission controller's lock: no I/O, no blocking, microseconds. For the
 * same reason implementations keep plain (unsynchronized) mutable state.
 */
public interface RoutingPolicy {
    /** The {@code policy} label: round_robin, least_load, power_of_two, cache_aware. */
    String name();

    /** Whether it reads {@link RoutingRequest#prefixKey}: if no policy does, nobody renders the prompt into one. */
    default boolean usesPrefix() {
        return false;
    }

    /** candidates: non-empty, all routable and with window room, in config order. */
    Choice choose(List<Worker> candidates, RoutingRequest request, LoadView load);

    /**
     * For a prefix policy: prompt tokens each of {@code workers} likely holds as a cached prefix of
     * the request, index for index (admission asks when the best of them has no window room, to
     * judge whether to wait for it); zeros when the policy does not know.
     */
    default long[] cachedTokens(List<Worker> workers, RoutingRequest request) {
        return new long[workers.size()];
    }

    /**
     * For a prefix policy that reads the workers' KV events: prompt tokens each data-parallel rank of
     * {@code worker} holds as a cached prefix of the request, by rank, as the rank's own events tell
     * (each rank has its own cache); empty when the policy does not know (no events, a view that is
     * not fresh, a prompt without token ids, a worker whose events are not per rank).
     */
    default int[] cachedTokensByRank(Worker worker, RoutingRequest request) {
        return NO_RANKS;
    }

    /** No per-rank knowledge. */
    int[] NO_RANKS = new int[0];

    /** The request was dispatched to {@code worker} (cache_aware: its prefix is now likely cached there). */
    default void dispatched(Worker worker, RoutingRequest request) {
    }

    /** Size of the policy's per-worker state for the gauge (cache_aware: tree size in characters), else 0. */
    default long stateSize(Worker worker) {
        return 0;
    }

    /**
     * The worker chosen and why; {@code reason} is the bounded {@code reason} label of
     * {@code sluice_routing_decisions_total} (prefix_hit, prefix_miss, balance_override,
     * least_load, round_robin, power_of_two); {@code cachedTokens}: prompt tokens the policy expects
     * the worker to find cached (a prefix policy's match; 0 when it does not know).
     */
    record Choice(Worker worker, String reason, long cachedTokens) {
        public Choice {
            Objects.requireNonNull(worker, "worker");
            Objects.requireNonNull(reason, "reason");
        }

        public Choice(Worker worker, String reason) {
            this(worker, reason, 0);
        }
    }
}
