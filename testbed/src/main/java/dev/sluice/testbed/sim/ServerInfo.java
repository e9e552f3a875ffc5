package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** Bodies of the informational GET routes, shaped like SGLang's ({@code /v1/models} like vLLM's too). */
final class ServerInfo {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final long STARTED = System.currentTimeMillis() / 1000;

    private ServerInfo() {
    }

    static ObjectNode models(SimWorker w) {
        ObjectNode o = F.objectNode();
        o.put("object", "list");
        ObjectNode m = o.putArray("data").addObject();
        m.put("id", w.cfg.model());
        m.put("object", "model");
        m.put("created", STARTED);
        m.put("owned_by", w.isVllm() ? "vllm" : "sglang");
        m.put("root", w.cfg.model());
        m.put("max_model_len", 131072);
        return o;
    }

    static ObjectNode modelInfo(SimWorker w) {
        ObjectNode o = F.objectNode();
        o.put("model_path", w.cfg.model());
        o.put("tokenizer_path", w.cfg.model());
        o.put("is_generation", true);
        return o;
    }

    static ObjectNode serverInfo(SimWorker w) {
        ObjectNode o = F.objectNode();
        o.put("model_path", w.cfg.model());
        o.put("tokenizer_path", w.cfg.model());
        o.put("served_model_name", w.cfg.model());
        o.put("host", w.host());
        o.put("port", w.port());
        o.put("disaggregation_mode", w.disaggregationMode());
        o.put("tp_size", 1);
        o.put("dp_size", 1);
        o.put("max_total_num_tokens", SimWorker.MAX_TOTAL_TOKENS);
        o.put("version", "sim");
        w.addServerInfo(o);
        ObjectNode state = o.putArray("internal_states").addObject();
        state.put("last_gen_throughput", w.metrics.genThroughput());
        return o;
    }

    static ArrayNode load(SimWorker w) {
        WorkerStats s = w.stats();
        ArrayNode a = F.arrayNode();
        ObjectNode o = a.addObject();
        o.put("dp_rank", 0);
        o.put("num_reqs", s.running() + s.queued());
        o.put("num_waiting_reqs", s.queued());
        o.put("num_tokens", w.tokensHeld());
        return a;
    }
}
