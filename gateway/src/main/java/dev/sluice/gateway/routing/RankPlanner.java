package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.RoutingConfig.DpAware;
import java.util.Objects;

/**
 * Decides {@link RankPlan} of a worker from its own description ({@link WorkerIdentity}) and
 * {@code routing.dp_aware}.
 *
 * <p>SGLang takes a rank per request in the body: {@code routed_dp_rank}, which its
 * {@code DataParallelController} honours ahead of any balancing method
 * ({@code maybe_external_dp_rank_routing}, sgl-project/sglang@000a3db1c0c42140f14ddab7b4c6dda86de1fa4b
 * python/sglang/srt/managers/data_parallel_controller.py; the field as named at sgl-project/sglang@004c82e0
 * python/sglang/srt/entrypoints/openai/protocol.py, {@code data_parallel_rank} its deprecated alias). Its
 * ranks are its {@code /server_info}'s {@code dp_size}.
 *
 * <p>vLLM takes one only from the {@code X-data-parallel-rank} header ({@code OpenAIServing._get_data_parallel_rank},
 * vllm-project/vllm@00bd1493b3e82d6c13c68ee8a0e1c5a96707e190 vllm/entrypoints/openai/engine/serving.py; a value
 * that is not an integer is ignored). Its internal balancer ({@code DPLBAsyncMPClient.get_core_engine_for_request},
 * vllm-project/vllm@00080ee13c7a451fce071ccb8d0e94d395acf5a7 vllm/v1/engine/core_client.py) then skips its own
 * choice and sends the request to {@code core_engines[rank]}: the position among the engines this API server
 * manages, {@code engine_ranks_managed = range(dp_rank, dp_rank + n)} (all {@code dp_size} ranks with internal
 * load balancing, the node's local ones with hybrid or external balancing); {@code InputProcessor.process_inputs}
 * refuses a rank outside {@code [0, n)} (vllm-project/vllm@009daaeebfb0ce2813f970f2173ea9c8eee09092
 * vllm/v1/engine/input_processor.py). vLLM reports no {@code dp_size} in {@code /v1/models} or {@code /version},
 * but its {@code /metrics} exports one series per managed engine: {@code PrometheusStatLogger} labels every
 * gauge {@code model_name} and {@code engine} for each index of {@code engine_idxs}
 * (vllm-project/vllm@005a810bc40faa25b8870fbc8559c3462581eee3 vllm/v1/metrics/loggers.py), which {@code AsyncLLM}
 * sets to {@code engine_core.engine_ranks_managed} (vllm-project/vllm@00080ee13c7a451fce071ccb8d0e94d395acf5a7
 * vllm/v1/engine/async_llm.py). So a vLLM worker's ranks are its engines in ascending order, counted by the
 * identity probe, and the header carries the position. An external-balancing server manages one engine: it is
 * routed whole.
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
            return vllm(id.engines());
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

    private static RankPlan vllm(int engines) {
        if (engines > 1) {
            return new RankPlan(engines, "per rank: vLLM's /metrics shows " + engines
                    + " engines (the rank goes in X-data-parallel-rank)", RankCarrier.HEADER);
        }
        return new RankPlan(1, engines == 1
                ? "per worker: vLLM's /metrics shows one engine (dp_size 1, or one rank of an externally balanced "
                + "deployment)"
                : "per worker: vLLM's /metrics shows no engine (unreadable, or no engine label on "
                + "vllm:num_requests_running); its own balancer picks the rank", RankCarrier.HEADER);
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
        if (kvEventRanks > 0 && id.dpSize() == 0 && id.engines() > 1 && id.engines() != kvEventRanks) {
            return "the worker's /metrics shows " + id.engines() + " engines but routing.kv_events.dp_ranks is "
                    + kvEventRanks + ": its engines are used for routing and for its KV event streams (one per "
                    + "engine, port + position)";
        }
        return null;
    }
}
