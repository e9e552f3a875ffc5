package dev.sluice.testbed.sim;

import java.util.Objects;

/**
 * A server's data-parallel ranks as their schedulers see them: whose turn the next round-robin item
 * is, each rank's share of the KV pool, and what each rank holds now. SGLang runs one scheduler per
 * DP rank, each with its own KV pool, and its controller keeps the round-robin turn
 * ({@code launch_dp_schedulers}, {@code round_robin_counter} in
 * sgl-project/sglang@000a3db1c0c42140f14ddab7b4c6dda86de1fa4b
 * python/sglang/srt/managers/data_parallel_controller.py), so every scheduler gauge is per rank.
 * The simulated ranks share the server's one event loop; which rank an item goes to is decided by
 * {@link DpDispatch}. Event loop only.
 */
final class DpRanks {
    /** KV tokens of the whole server, split evenly among its ranks. */
    static final long MAX_TOTAL_TOKENS = 1 << 20;

    private final SimWorker worker;
    /** The rank the next round-robin item goes to. */
    private int next;

    DpRanks(SimWorker worker) {
        this.worker = Objects.requireNonNull(worker, "worker");
    }

    /** Gives the item the next rank in turn, round-robin over {@code dpSize}. */
    void assignRoundRobin(SimItem item) {
        item.dpRank = next;
        next = (next + 1) % worker.cfg.dpSize();
    }

    /**
     * Gives the item the engine with the fewest requests, scanning from a start that moves on by one each
     * time (ties go round), as vLLM's internal balancer does for a request that names no rank:
     * {@code DPLBAsyncMPClient.get_core_engine_for_request} scores each engine by its waiting + running
     * requests (at least this client's own in-flight count) and rotates {@code eng_start_index}
     * (vllm-project/vllm@00080ee13c7a451fce071ccb8d0e94d395acf5a7 vllm/v1/engine/core_client.py). Its KV-usage
     * penalty on waiting requests is left out. {@code sameRequest}: the request's items placed already (vLLM
     * places each of n > 1 children in turn).
     */
    void assignLeastLoaded(SimItem item, java.util.List<SimItem> sameRequest) {
        int n = worker.cfg.dpSize();
        int[] load = new int[n];
        for (SimItem i : worker.live) {
            load[Math.floorMod(i.dpRank, n)]++;
        }
        for (SimItem i : sameRequest) {
            load[Math.floorMod(i.dpRank, n)]++;
        }
        int best = next;
        for (int k = 1; k < n; k++) {
            int idx = (next + k) % n;
            if (load[idx] < load[best]) {
                best = idx;
            }
        }
        item.dpRank = best;
        next = (next + 1) % n;
    }

    /** KV tokens one data-parallel rank holds at most: its own pool. */
    long poolTokens() {
        return MAX_TOTAL_TOKENS / worker.cfg.dpSize();
    }

    /**
     * What each data-parallel rank holds now, from the live items. Every scheduler gauge is reported
     * per rank, as SGLang's schedulers (one per DP rank) and vLLM's engines do.
     */
    SimMetrics.RankLoad[] loads() {
        SimMetrics.RankLoad[] ranks = new SimMetrics.RankLoad[worker.cfg.dpSize()];
        for (int r = 0; r < ranks.length; r++) {
            ranks[r] = new SimMetrics.RankLoad(r);
        }
        for (SimItem item : worker.live) {
            SimMetrics.RankLoad r = ranks[Math.floorMod(item.dpRank, ranks.length)];
            if (item.state == SimItem.State.STALLED) {
                r.running++;
            } else {
                worker.classify(item, r);
            }
        }
        worker.addHeld(ranks);
        return ranks;
    }

    /** KV usage ratio of one rank: the {@code tokenUsage} knob when set, else used tokens over its pool. */
    double tokenUsage(SimMetrics.RankLoad r) {
        double knob = worker.faults.tokenUsage();
        return knob >= 0 ? knob : Math.min(1.0, (double) r.usedTokens / poolTokens());
    }

    /** Used tokens of one rank as reported: consistent with {@link #tokenUsage} when the knob is set. */
    long usedTokens(SimMetrics.RankLoad r) {
        double knob = worker.faults.tokenUsage();
        return knob >= 0 ? Math.round(knob * poolTokens()) : r.usedTokens;
    }
}
