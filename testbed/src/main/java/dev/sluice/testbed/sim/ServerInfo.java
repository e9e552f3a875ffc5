package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Bodies of the informational GET routes, shaped like SGLang's ({@code /v1/models} like vLLM's too).
 * Built on the server's event loop (the load routes read the live items).
 */
final class ServerInfo {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final long STARTED = System.currentTimeMillis() / 1000;
    /** What the simulator reports as SGLang's {@code __version__}. */
    static final String VERSION = "sim";
    /**
     * The sections {@code /v1/loads?include=} takes (sgl-project/sglang
     * python/sglang/srt/managers/io_struct.py GetLoadsReqInput.VALID_SECTIONS).
     */
    static final Set<String> LOAD_SECTIONS = new TreeSet<>(List.of("core", "memory", "spec", "lora", "disagg",
            "queues", "all"));

    /** {@code /v1/loads} refused a parameter: the message of SGLang's 400. */
    static final class BadLoadsQuery extends Exception {
        BadLoadsQuery(String message) {
            super(message, null, false, false);
        }
    }

    private ServerInfo() {
    }

    /**
     * {@code /v1/models}: one ModelCard whose {@code max_model_len} is the context length
     * (sgl-project/sglang python/sglang/srt/entrypoints/http_server.py available_models).
     */
    static ObjectNode models(SimWorker w) {
        ObjectNode o = F.objectNode();
        o.put("object", "list");
        ObjectNode m = o.putArray("data").addObject();
        m.put("id", w.cfg.model());
        m.put("object", "model");
        m.put("created", STARTED);
        m.put("owned_by", w.isVllm() ? "vllm" : "sglang");
        m.put("root", w.cfg.model());
        m.put("max_model_len", w.cfg.contextLength());
        return o;
    }

    /**
     * {@code /model_info} (and the deprecated {@code /get_model_info}): sgl-project/sglang
     * python/sglang/srt/entrypoints/http_server.py model_info.
     */
    static ObjectNode modelInfo(SimWorker w) {
        ObjectNode o = F.objectNode();
        o.put("model_path", w.cfg.model());
        o.put("tokenizer_path", w.cfg.model());
        o.put("is_generation", true);
        o.putNull("preferred_sampling_params");
        o.put("weight_version", "default");
        o.put("has_image_understanding", false);
        o.put("has_audio_understanding", false);
        o.putNull("model_type");
        o.putNull("architectures");
        return o;
    }

    /**
     * {@code /server_info} (and the deprecated {@code /get_server_info}): the server arguments, flat,
     * plus scheduler info, {@code internal_states} (one per DP rank) and {@code version}
     * (sgl-project/sglang python/sglang/srt/entrypoints/http_server.py server_info:
     * {@code dataclasses.asdict(server_args)}). The subset a gateway reads; API keys are left out.
     */
    static ObjectNode serverInfo(SimWorker w) {
        SimConfig c = w.cfg;
        ObjectNode o = F.objectNode();
        o.put("model_path", c.model());
        o.put("tokenizer_path", c.model());
        o.put("served_model_name", c.model());
        o.put("host", w.host());
        o.put("port", w.port());
        o.put("context_length", c.contextLength());
        o.put("disaggregation_mode", w.disaggregationMode());
        o.put("disaggregation_transfer_backend", "mooncake");
        o.put("disaggregation_bootstrap_port", GenerationRequest.DEFAULT_BOOTSTRAP_PORT);
        o.put("tp_size", 1);
        o.put("pp_size", 1);
        o.put("dp_size", c.dpSize());
        o.put("enable_dp_attention", c.dpSize() > 1);
        o.put("enable_metrics", c.enableMetrics());
        if (c.maxQueuedRequests() > 0) {
            o.put("max_queued_requests", c.maxQueuedRequests());
        } else {
            o.putNull("max_queued_requests");
        }
        o.put("max_running_requests", c.decodeMaxBatch());
        o.put("max_total_num_tokens", w.ranks.poolTokens());
        o.put("max_req_input_len", c.contextLength() - 1);
        o.put("version", c.serverVersion());
        w.addServerInfo(o);
        ArrayNode states = o.putArray("internal_states");
        double throughput = w.metrics.genThroughput() / c.dpSize();
        for (int r = 0; r < c.dpSize(); r++) {
            ObjectNode state = states.addObject();
            state.put("dp_rank", r);
            state.put("last_gen_throughput", throughput);
            // each rank's running cap, as newer SGLang schedulers report it (SimWorker.runningCapPerRank)
            state.put("effective_max_running_requests_per_dp", w.runningCapPerRank());
        }
        return o;
    }

    /**
     * The deprecated {@code /get_load}: one object per DP rank, the legacy projection of
     * {@code /v1/loads} (sgl-project/sglang python/sglang/srt/entrypoints/http_server.py get_load).
     */
    static ArrayNode load(SimWorker w) {
        ArrayNode a = F.arrayNode();
        double ts = System.nanoTime() / 1e9;
        for (SimMetrics.RankLoad r : w.ranks.loads()) {
            ObjectNode o = a.addObject();
            long used = w.ranks.usedTokens(r);
            o.put("dp_rank", r.rank);
            o.put("num_reqs", r.requests());
            o.put("num_waiting_reqs", r.waiting());
            o.put("num_tokens", used);
            o.put("num_pending_tokens", 0);
            o.put("ts_tic", ts);
        }
        return a;
    }

    /**
     * {@code /v1/loads}: {@code {"timestamp","version","accelerator","num_accelerators","loads":[...]}},
     * one load per DP rank (sgl-project/sglang@0564b5215b333749d722348c3b3d9b92c3de8c44
     * python/sglang/srt/entrypoints/v1_loads.py get_loads; fields from io_struct.py GetLoadsReqOutput).
     *
     * @param include the {@code include} query parameter (comma-separated sections), null: all
     * @param dpRank  the {@code dp_rank} query parameter, null: every rank
     */
    static ObjectNode loads(SimWorker w, String include, String dpRank) throws BadLoadsQuery {
        Set<String> sections = new LinkedHashSet<>();
        if (include == null || include.isBlank()) {
            sections.add("all");
        } else {
            Set<String> invalid = new TreeSet<>();
            for (String s : include.split(",")) {
                String t = s.trim();
                (LOAD_SECTIONS.contains(t) ? sections : invalid).add(t);
            }
            if (!invalid.isEmpty()) {
                throw new BadLoadsQuery("Invalid include sections: {'" + String.join("', '", invalid)
                        + "'}. Valid options: ['" + String.join("', '", LOAD_SECTIONS) + "']");
            }
        }
        boolean all = sections.contains("all");
        Integer onlyRank = null;
        if (dpRank != null) {
            try {
                onlyRank = Integer.parseInt(dpRank.trim());
            } catch (NumberFormatException e) {
                throw new BadLoadsQuery("dp_rank: " + dpRank + " (expected: an integer)");
            }
            if (onlyRank < 0 || onlyRank >= w.cfg.dpSize()) {
                throw new BadLoadsQuery("Invalid dp_rank " + onlyRank + "; dp_size is " + w.cfg.dpSize());
            }
        }
        ObjectNode o = F.objectNode();
        o.put("timestamp", Instant.now().toString());
        o.put("version", VERSION);
        o.putNull("accelerator");
        o.put("num_accelerators", 1);
        ArrayNode loads = o.putArray("loads");
        double throughput = w.metrics.genThroughput() / w.cfg.dpSize();
        double epoch = System.currentTimeMillis() / 1000.0;
        for (SimMetrics.RankLoad r : w.ranks.loads()) {
            if (onlyRank != null && r.rank != onlyRank) {
                continue;
            }
            ObjectNode l = loads.addObject();
            long used = w.ranks.usedTokens(r);
            l.put("dp_rank", r.rank);
            l.put("timestamp", epoch);
            if (all || sections.contains("core")) {
                l.put("num_running_reqs", r.running);
                l.put("num_waiting_reqs", r.waiting());
                l.put("num_used_tokens", used);
                l.put("num_total_tokens", used);
                l.put("max_total_num_tokens", w.ranks.poolTokens());
                l.put("token_usage", w.ranks.tokenUsage(r));
                l.put("gen_throughput", throughput);
                l.put("cache_hit_rate", w.prefixCache.hitRate());
                l.put("utilization", w.ranks.tokenUsage(r));
                l.put("max_running_requests", w.runningCapPerRank()); // the rank's own scheduler's cap
            }
            if (all || sections.contains("memory")) {
                ObjectNode m = l.putObject("memory");
                m.put("weight_gb", 0.0);
                m.put("kv_cache_gb", 0.0);
                m.put("graph_gb", 0.0);
                m.put("token_capacity", w.ranks.poolTokens());
            }
            if (all || sections.contains("disagg")) {
                ObjectNode d = l.putObject("disaggregation");
                d.put("mode", w.disaggregationMode());
                d.put("prefill_prealloc_queue_reqs", r.prefillPrealloc);
                d.put("prefill_inflight_queue_reqs", r.prefillInflight);
                d.put("decode_prealloc_queue_reqs", r.decodePrealloc);
                d.put("decode_transfer_queue_reqs", r.decodeTransfer);
                d.put("decode_retracted_queue_reqs", 0);
                d.put("kv_transfer_speed_gb_s", 0.0);
                d.put("kv_transfer_latency_ms", 0.0);
            }
            if (all || sections.contains("queues")) {
                ObjectNode q = l.putObject("queues");
                q.put("waiting", r.waiting());
                q.put("grammar", 0);
                q.put("paused", 0);
                q.put("retracted", 0);
            }
        }
        return o;
    }
}
