package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.RoutingConfig.DpAware;
import java.util.Objects;

/**
 * Decides {@link RankPlan} of a worker from its own description ({@code /server_info}'s
 * {@code dp_size}, {@link WorkerIdentity}) and {@code routing.dp_aware}.
 *
 * <p>Only SGLang takes a rank per request in the body: {@code routed_dp_rank}, which its
 * {@code DataParallelController} honours ahead of any balancing method
 * ({@code maybe_external_dp_rank_routing}, sgl-project/sglang@000a3db1c0c42140f14ddab7b4c6dda86de1fa4b
 * python/sglang/srt/managers/data_parallel_controller.py; the field as named at sgl-project/sglang@004c82e0
 * python/sglang/srt/entrypoints/openai/protocol.py, {@code data_parallel_rank} its deprecated alias).
 * vLLM takes one only from an {@code X-data-parallel-rank} header ({@code _get_data_parallel_rank} in
 * vllm/entrypoints/openai serving) and does not report its DP size ({@code /v1/models}, {@code /version}
 * and {@code /load} carry none; {@code /server_info}, which has its config, is registered only under
 * {@code VLLM_SERVER_DEV_MODE}; the internal and external balancing modes:
 * vllm-project/vllm@624b7aff3e997f284b2149b3798099029b916687 docs/serving/data_parallel_deployment.md):
 * a vLLM worker is routed as a whole and its engine core client balances its ranks.
 *
 * @param kvEventRanks {@code routing.kv_events.dp_ranks}, 0 when there is no KV event subscription
 */
public record RankPlanner(DpAware mode, int kvEventRanks) {
    public static final RankPlanner OFF = new RankPlanner(DpAware.NEVER, 0);

    public RankPlanner {
        Objects.requireNonNull(mode, "mode");
    }

    /** The plan for a worker that described itself as {@code id}. */
    public RankPlan plan(WorkerIdentity id) {
        if (mode == DpAware.NEVER) {
            return new RankPlan(1, "per worker: routing.dp_aware is never");
        }
        if (id.server().equals("vllm")) {
            return new RankPlan(1, "per worker: vLLM reports no dp_size and takes no rank in the body "
                    + "(its own balancer picks the rank)");
        }
        if (!id.server().equals("sglang")) {
            return RankPlan.PER_WORKER;
        }
        if (id.dpSize() > 1) {
            return new RankPlan(id.dpSize(), "per rank: the worker reports dp_size " + id.dpSize());
        }
        if (id.dpSize() == 0 && mode == DpAware.ALWAYS && kvEventRanks > 1) {
            return new RankPlan(kvEventRanks, "per rank: no dp_size reported, routing.kv_events.dp_ranks is "
                    + kvEventRanks + " (dp_aware: always)");
        }
        return new RankPlan(1, id.dpSize() == 1 ? "per worker: the worker reports dp_size 1"
                : "per worker: the worker reports no dp_size");
    }

    /**
     * A warning when the worker's own {@code dp_size} and {@code routing.kv_events.dp_ranks} differ (the
     * worker's wins: that many ranks publish events and take requests, and the subscription follows it), else null.
     */
    public String mismatch(WorkerIdentity id) {
        if (kvEventRanks > 0 && id.dpSize() > 0 && id.dpSize() != kvEventRanks) {
            return "the worker reports dp_size " + id.dpSize() + " but routing.kv_events.dp_ranks is " + kvEventRanks
                    + ": its dp_size is used for routing and for its KV event streams (one per rank, port + rank)";
        }
        return null;
    }
}
