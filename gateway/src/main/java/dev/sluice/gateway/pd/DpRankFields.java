package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.routing.RankChoice;

/**
 * The data-parallel rank fields of an SGLang worker request, for a worker routed per rank
 * ({@code routing.dp_aware}). SGLang's {@code DataParallelController} sends a request that names a rank
 * in {@code routed_dp_rank} to that rank before any balancing method ({@code maybe_external_dp_rank_routing},
 * sgl-project/sglang@000a3db1c0c42140f14ddab7b4c6dda86de1fa4b python/sglang/srt/managers/data_parallel_controller.py;
 * the field renamed from {@code data_parallel_rank} by sgl-project/sglang PR #19268, as at sglang@004c82e0
 * python/sglang/srt/entrypoints/openai/protocol.py). A PD prefill otherwise follows
 * {@code bootstrap_room % dp_size} ({@code follow_bootstrap_room_scheduler}), and a PD decode fetches the
 * KV from the prefill rank {@code disagg_prefill_dp_rank} names, else from {@code bootstrap_room % dp_size}
 * of the prefill ({@code DecodePreallocQueue._resolve_prefill_dp_rank},
 * python/sglang/srt/disaggregation/decode.py). So the gateway writes all three: the prefill's rank on the
 * prefill, the decode's own rank and the prefill's on the decode, and a room with
 * {@code room % dp_size} equal to the prefill's rank, which keeps the pair together on a server that
 * ignores the rank fields.
 */
final class DpRankFields {
    /**
     * vLLM's rank header: the position of the engine among those its API server manages (see
     * {@link dev.sluice.gateway.routing.RankPlanner}). Built into each worker request by the gateway; the
     * client's headers are never forwarded ({@link Attempt#workerRequest}), so a client's own cannot reach a worker.
     */
    static final String VLLM_HEADER = "X-data-parallel-rank";
    static final String ROUTED = "routed_dp_rank";
    static final String PREFILL_RANK = "disagg_prefill_dp_rank";
    /** The rank fields a client may not set (the old name included): the gateway's admission counts per rank. */
    static final java.util.List<String> OWNED = java.util.List.of(ROUTED, "data_parallel_rank", PREFILL_RANK);
    /** Rooms are drawn below 2^62 so that aligning one to a rank stays within SGLang's [0, 2^63-1]. */
    private static final long ROOM_BOUND = 1L << 62;

    private DpRankFields() {
    }

    /**
     * The {@link #VLLM_HEADER} value for {@code rank} (chosen among {@code ranks}) on worker {@code w}, or -1 for
     * none: the worker is routed whole, takes its rank in the body (SGLang), or its engines changed since the
     * dispatch (a rank counted among another number of engines could be out of vLLM's range, which it refuses).
     */
    static int headerRank(dev.sluice.gateway.routing.Worker w, int rank, int ranks) {
        dev.sluice.gateway.routing.RankPlan plan = w.rankPlan();
        return rank >= 0 && plan.carrier() == dev.sluice.gateway.routing.RankCarrier.HEADER && plan.ranks() == ranks
                ? rank : -1;
    }

    /** A fresh room, with {@code room % ranks == rank} when the prefill is routed per rank. */
    static long room(RankChoice c) {
        long room = java.util.concurrent.ThreadLocalRandom.current().nextLong(ROOM_BOUND);
        return c.prefillRanked() ? room - room % c.prefillRanks() + c.prefillRank() : room;
    }

    /** JSON members for the prefill's copy ({@code ,"routed_dp_rank":r}), "" when it is routed whole. */
    static String prefillMembers(RankChoice c) {
        return c.prefillRanked() ? ",\"" + ROUTED + "\":" + c.prefillRank() : "";
    }

    /** JSON members for the decode's copy: its own rank, and the prefill rank that holds its KV. */
    static String decodeMembers(RankChoice c) {
        return (c.decodeRanked() ? ",\"" + ROUTED + "\":" + c.decodeRank() : "")
                + (c.prefillRanked() ? ",\"" + PREFILL_RANK + "\":" + c.prefillRank() : "");
    }

    /** A unified worker's (or a direct decode's) rank, as JSON members. */
    static String unifiedMembers(RankChoice c) {
        return c.decodeRanked() ? "\"" + ROUTED + "\":" + c.decodeRank() : "";
    }

    /** The prefill's copy of a tree body: its rank, no decode hint. */
    static void forPrefill(ObjectNode body, RankChoice c) {
        body.remove(OWNED);
        if (c.prefillRanked()) {
            body.put(ROUTED, c.prefillRank());
        }
    }

    /** The decode's copy of a tree body. */
    static void forDecode(ObjectNode body, RankChoice c) {
        body.remove(OWNED);
        if (c.decodeRanked()) {
            body.put(ROUTED, c.decodeRank());
        }
        if (c.prefillRanked()) {
            body.put(PREFILL_RANK, c.prefillRank());
        }
    }
}
