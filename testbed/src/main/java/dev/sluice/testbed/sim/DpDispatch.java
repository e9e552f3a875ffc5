package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * How a simulated SGLang server with attention data parallelism gives each request a rank, as
 * SGLang's {@code DataParallelController} does (sgl-project/sglang@000a3db1c0c42140f14ddab7b4c6dda86de1fa4b
 * python/sglang/srt/managers/data_parallel_controller.py): a request that names a rank goes there
 * ({@code maybe_external_dp_rank_routing}, ahead of every load-balance method); otherwise a PD
 * prefill follows {@code bootstrap_room % dp_size} ({@code follow_bootstrap_room_scheduler}, the
 * prefill's method: {@code server_args.py} turns a prefill's {@code round_robin}/{@code auto} into
 * {@code follow_bootstrap_room}) and every other server takes its ranks in turn
 * ({@code round_robin_scheduler}). The rank's field is {@code routed_dp_rank}; {@code data_parallel_rank}
 * is its deprecated name, migrated to it (sgl-project/sglang@004c82e0
 * python/sglang/srt/entrypoints/openai/protocol.py). A PD decode fetches its KV from the prefill rank
 * named by {@code disagg_prefill_dp_rank}, else {@code bootstrap_room % dp_size} of the prefill
 * ({@code DecodePreallocQueue._resolve_prefill_dp_rank} in python/sglang/srt/disaggregation/decode.py);
 * the simulated cluster shares one {@code dpSize}, so the decode's own stands for the prefill's.
 * Event loop only.
 */
final class DpDispatch {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(DpDispatch.class);
    static final String ROUTED = "routed_dp_rank";
    static final String DEPRECATED = "data_parallel_rank";
    static final String PREFILL_RANK = "disagg_prefill_dp_rank";
    /** vLLM's rank header, as {@link SimHttpHandler} keeps header names (lower case). */
    static final String VLLM_HEADER = "x-data-parallel-rank";

    /** The rank fields of one body, checked against the server's {@code dp_size}. */
    record Requested(Integer routed, Integer prefillRank) {
    }

    static final Requested NONE = new Requested(null, null);

    private DpDispatch() {
    }

    /**
     * The body's rank fields. A rank outside [0, dp_size) is ignored with a warning, the server
     * choosing as if none was named (sgl-project/sglang PR #19762, "Fix routed_dp_rank boundary
     * validation": {@code maybe_external_dp_rank_routing} falls back to load balancing instead of the
     * IndexError of {@code self.workers[rank]}); a value that is not an integer is refused (400).
     */
    static Requested read(JsonNode body, int dpSize) throws GenerationRequest.BadRequest {
        Integer routed = rank(body, ROUTED, dpSize);
        if (routed == null) {
            routed = rank(body, DEPRECATED, dpSize);
        }
        return new Requested(routed, rank(body, PREFILL_RANK, dpSize));
    }

    private static Integer rank(JsonNode body, String field, int dpSize) throws GenerationRequest.BadRequest {
        JsonNode v = body == null ? null : body.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isIntegralNumber()) {
            throw new GenerationRequest.BadRequest(field + ": " + v + " (expected: an integer)");
        }
        int r = v.asInt();
        if (r < 0 || r >= dpSize) {
            log.warn("{} {} is out of range (dp_size {}): the server picks the rank", field, r, dpSize);
            return null;
        }
        return r;
    }

    /**
     * A vLLM server's rank for a request, from its {@code X-data-parallel-rank} header (lower-cased as the
     * simulator keeps headers): {@code OpenAIServing._get_data_parallel_rank} reads it and ignores a value that is
     * not an integer (vllm-project/vllm@00bd1493b3e82d6c13c68ee8a0e1c5a96707e190
     * vllm/entrypoints/openai/engine/serving.py); {@code InputProcessor.process_inputs} refuses one outside
     * [0, engines) with a validation error, a 400 (vllm-project/vllm@009daaeebfb0ce2813f970f2173ea9c8eee09092
     * vllm/v1/engine/input_processor.py); {@code DPLBAsyncMPClient.get_core_engine_for_request} then sends it to
     * that engine without balancing (vllm-project/vllm@00080ee13c7a451fce071ccb8d0e94d395acf5a7
     * vllm/v1/engine/core_client.py). Without the header the server balances ({@link DpRanks#assignLeastLoaded}).
     */
    static Requested vllmHeader(String value, int engines) throws GenerationRequest.BadRequest {
        if (value == null) {
            return NONE;
        }
        int r;
        try {
            r = Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            return NONE;
        }
        if (r < 0 || r >= engines) {
            throw new GenerationRequest.BadRequest("data_parallel_rank " + r + " is out of range [0, " + engines + ").");
        }
        return new Requested(r, null);
    }

    /** Gives each item its rank and records it (and, on a decode, the prefill rank it will fetch from). */
    static void assign(SimWorker w, Requested req, List<SimItem> items) {
        int dp = w.cfg.dpSize();
        for (int k = 0; k < items.size(); k++) {
            SimItem item = items.get(k);
            RankAssignment.How how;
            if (req.routed() != null) {
                item.dpRank = req.routed();
                how = RankAssignment.How.ROUTED;
            } else if (w.isVllm()) {
                w.ranks.assignLeastLoaded(item, items.subList(0, k));
                how = RankAssignment.How.LEAST_LOADED;
            } else if (w instanceof PrefillServer && item.room >= 0) {
                item.dpRank = (int) (item.room % dp);
                how = RankAssignment.How.BOOTSTRAP_ROOM;
            } else {
                w.ranks.assignRoundRobin(item);
                how = RankAssignment.How.ROUND_ROBIN;
            }
            if (item.room >= 0) {
                item.prefillDpRank = req.prefillRank() != null ? req.prefillRank() : (int) (item.room % dp);
            }
            w.journal.record(new RankAssignment(item.rid, item.room, item.dpRank, how));
        }
    }
}
