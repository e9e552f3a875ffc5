package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * The fields of a worker request that belong to the gateway, never to the client: a client's copy
 * of any of them is dropped before its body reaches a worker (a client-chosen bootstrap host would
 * point a decode at a host of its choosing; a client-chosen {@code kv_transfer_params} would point a
 * vLLM decode at someone else's KV blocks).
 */
final class WorkerBodies {
    static final List<String> GATEWAY_OWNED = List.of("bootstrap_host", "bootstrap_port", "bootstrap_room", "rid",
            "kv_transfer_params");

    private WorkerBodies() {
    }

    /** A copy of the client's body without the gateway-owned fields. */
    static ObjectNode clientCopy(ObjectNode body) {
        ObjectNode copy = body.deepCopy();
        copy.remove(GATEWAY_OWNED);
        return copy;
    }

    /**
     * vLLM's prefill leg ({@code toy_proxy_server} / NixlConnector): the client's request made into a
     * one-token, non-streamed prefill that keeps its KV for a remote decode.
     */
    static ObjectNode vllmPrefillLeg(ObjectNode body) {
        ObjectNode leg = clientCopy(body);
        ObjectNode kv = JsonNodeFactory.instance.objectNode();
        kv.put("do_remote_decode", true).put("do_remote_prefill", false).putNull("remote_engine_id");
        kv.putNull("remote_block_ids").putNull("remote_host").putNull("remote_port");
        leg.set("kv_transfer_params", kv);
        leg.put("max_tokens", 1);
        if (leg.has("max_completion_tokens")) {
            leg.put("max_completion_tokens", 1);
        }
        leg.put("stream", false);
        leg.remove(List.of("stream_options", "min_tokens"));
        return leg;
    }

    /** vLLM's decode leg: the client's own request with the prefill's {@code kv_transfer_params}. */
    static ObjectNode vllmDecodeLeg(ObjectNode body, ObjectNode kvTransferParams) {
        ObjectNode leg = clientCopy(body);
        leg.set("kv_transfer_params", kvTransferParams);
        return leg;
    }
}
