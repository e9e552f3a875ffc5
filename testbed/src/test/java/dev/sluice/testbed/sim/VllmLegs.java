package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/** What vLLM's disaggregated proxy (toy_proxy_server) does to a client body, by hand, for the tests. */
final class VllmLegs {
    static final String CHAT = "/v1/chat/completions";
    static final String COMPLETIONS = "/v1/completions";

    private VllmLegs() {
    }

    /** Step 1: one token, not streamed, asking the prefill to keep its KV for a remote decode. */
    static ObjectNode prefillLeg(ObjectNode client) {
        ObjectNode leg = client.deepCopy();
        ObjectNode kv = leg.putObject("kv_transfer_params");
        kv.put("do_remote_decode", true).put("do_remote_prefill", false).putNull("remote_engine_id");
        kv.putNull("remote_block_ids").putNull("remote_host").putNull("remote_port");
        leg.put("max_tokens", 1);
        leg.put("stream", false);
        leg.remove(List.of("stream_options", "min_tokens"));
        return leg;
    }

    /** Step 3: the client's body with the params the prefill answered. */
    static ObjectNode decodeLeg(ObjectNode client, JsonNode kvTransferParams) {
        ObjectNode leg = client.deepCopy();
        leg.set("kv_transfer_params", kvTransferParams);
        return leg;
    }
}
