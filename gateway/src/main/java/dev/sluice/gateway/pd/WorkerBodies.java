package dev.sluice.gateway.pd;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.GenerationRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import java.util.List;

/**
 * The fields of a worker request that belong to the gateway, never to the client: a client's copy
 * of any of them is dropped before its body reaches a worker (a client-chosen bootstrap host would
 * point a decode at a host of its choosing; a client-chosen {@code kv_transfer_params} would point a
 * vLLM decode at someone else's KV blocks; a client-chosen data-parallel rank would undo the
 * gateway's per-rank admission; a client-chosen {@code external_trace_header} would win over the
 * {@code traceparent} header the gateway writes, SGLang reading that body field first, and hang the
 * worker's spans under a parent of the client's choosing instead of the gateway's call span).
 */
final class WorkerBodies {
    // the keys: GenerationRequest.GATEWAY_OWNED (the parse marks a body holding none as clean). SGLang's
    // GenerateReqInput.external_trace_header is among them: the trace context a caller without HTTP headers
    // (its Engine, its gRPC server) hands over, taken before the request's own headers
    static final List<String> GATEWAY_OWNED = dev.sluice.gateway.api.GenerationRequest.GATEWAY_OWNED;
    static final String SGLANG_TRACE_CONTEXT = "external_trace_header";

    private WorkerBodies() {
    }

    /**
     * The fast path of every driver: the client's bytes as received, with {@code fields} (JSON
     * members, {@code "name":value,...}, or empty) spliced in before the object's closing brace,
     * written straight into one pooled buffer. No tree is serialized. Null when it does not apply
     * (the client sent a gateway-owned field, which must be dropped; an empty object; bytes that
     * do not end with the brace): the caller then takes the tree path.
     */
    static ByteBuf spliced(ByteBufAllocator alloc, GenerationRequest request, String fields) {
        if (!request.clean() || request.body().isEmpty()) {
            return null;
        }
        byte[] raw = request.raw();
        int brace = raw.length - 1;
        while (brace >= 0 && (raw[brace] == ' ' || raw[brace] == '\n' || raw[brace] == '\r' || raw[brace] == '\t')) {
            brace--;
        }
        if (brace < 0 || raw[brace] != '}') {
            return null;
        }
        int extra = fields.isEmpty() ? 0 : 1 + ByteBufUtil.utf8Bytes(fields);
        ByteBuf out = alloc.buffer(brace + 1 + extra);
        out.writeBytes(raw, 0, brace);
        if (!fields.isEmpty()) {
            out.writeByte(',');
            ByteBufUtil.writeUtf8(out, fields);
        }
        out.writeByte('}');
        return out;
    }

    /** {@code "name":"value"} with the value escaped as a JSON string. */
    static String member(String name, String value) {
        return '"' + name + "\":\"" + new String(JsonStringEncoder.getInstance().quoteAsString(value)) + '"';
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

    /**
     * vLLM's decode leg: the client's own request with the prefill's {@code kv_transfer_params}; null
     * params (the prefill's one token ended it: NixlConnector answers none) send it without any, and the
     * decode computes the prompt itself.
     */
    static ObjectNode vllmDecodeLeg(ObjectNode body, ObjectNode kvTransferParams) {
        ObjectNode leg = clientCopy(body);
        if (kvTransferParams != null) {
            leg.set("kv_transfer_params", kvTransferParams);
        }
        return leg;
    }

    /**
     * A decode leg nobody waits for, sent only so that the prefill's KV blocks are freed now rather
     * than after {@code VLLM_NIXL_ABORT_REQUEST_TIMEOUT} (480 s): a decode that receives the
     * {@code kv_transfer_params} reads the blocks (or, aborted first, notifies the prefill) and the
     * prefill frees them (vllm-project/vllm
     * {@code vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py}, {@code request_finished}
     * and {@code update_state_after_alloc}). One token, not streamed: as little decode work as can be.
     */
    static ObjectNode vllmReleaseLeg(ObjectNode body, ObjectNode kvTransferParams) {
        ObjectNode leg = vllmDecodeLeg(body, kvTransferParams);
        leg.put("max_tokens", 1);
        if (leg.has("max_completion_tokens")) {
            leg.put("max_completion_tokens", 1);
        }
        leg.put("stream", false);
        leg.remove(List.of("stream_options", "min_tokens", "n"));
        return leg;
    }
}
