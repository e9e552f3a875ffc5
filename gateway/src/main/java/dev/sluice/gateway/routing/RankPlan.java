package dev.sluice.gateway.routing;

import java.util.Objects;

/**
 * How the gateway routes to one worker's data-parallel ranks: {@code ranks} targets (1: the worker
 * as a whole, its own balancer picking the rank), where a request names its rank, and why, in one
 * sentence for {@code /admin/state}, {@code status} and the log. Decided from the worker's own
 * description by {@link RankPlanner}.
 *
 * @param ranks   the ranks requests are sent to, 1 for per-worker routing
 * @param note    why: the reported {@code dp_size} or engines, or why the worker is routed as a whole
 * @param carrier where a request to this worker names its rank (SGLang's body field, vLLM's header)
 */
public record RankPlan(int ranks, String note, RankCarrier carrier) {
    /** Before the worker has described itself. */
    public static final RankPlan PER_WORKER = new RankPlan(1, "per worker: the worker has not reported its dp_size yet");

    public RankPlan {
        if (ranks < 1) {
            throw new IllegalArgumentException("ranks: " + ranks + " (expected: >= 1)");
        }
        Objects.requireNonNull(note, "note");
        Objects.requireNonNull(carrier, "carrier");
    }

    /** An SGLang worker's plan (or a worker routed whole, where no rank is named). */
    public RankPlan(int ranks, String note) {
        this(ranks, note, RankCarrier.BODY_FIELD);
    }

    /** Whether each request is given a rank of this worker. */
    public boolean perRank() {
        return ranks > 1;
    }
}
