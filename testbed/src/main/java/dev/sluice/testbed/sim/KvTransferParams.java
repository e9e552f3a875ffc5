package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * vLLM's {@code kv_transfer_params} (NixlConnector) as a request body carries them: on a prefill
 * leg {@code do_remote_decode: true}; on a decode leg the dict the prefill answered. Parsed without
 * judging, so that SGLang servers (which ignore the field) never fail on it; the vLLM roles check
 * what they need with {@link #decodeLegProblem()}.
 *
 * @param raw the field as sent
 */
record KvTransferParams(JsonNode raw, boolean doRemoteDecode, boolean doRemotePrefill, String remoteEngineId,
                        List<Integer> remoteBlockIds, String remoteHost, int remotePort, String remoteRequestId) {

    /** The field of {@code body}, or null when it is absent or JSON null (both mean "no handoff" to vLLM). */
    static KvTransferParams of(JsonNode body) {
        JsonNode v = body.get("kv_transfer_params");
        if (v == null || v.isNull()) {
            return null;
        }
        List<Integer> blocks = null;
        JsonNode ids = v.get("remote_block_ids");
        if (ids != null && ids.isArray()) {
            blocks = new ArrayList<>(ids.size());
            for (JsonNode id : ids) {
                blocks.add(id.canConvertToInt() ? id.asInt() : -1);
            }
        }
        JsonNode port = v.get("remote_port");
        return new KvTransferParams(v, v.path("do_remote_decode").asBoolean(false),
                v.path("do_remote_prefill").asBoolean(false), text(v.get("remote_engine_id")), blocks,
                text(v.get("remote_host")), port != null && port.canConvertToInt() ? port.asInt() : -1,
                text(v.get("remote_request_id")));
    }

    private static String text(JsonNode v) {
        return v == null || v.isNull() || v.asText().isEmpty() ? null : v.asText();
    }

    /**
     * Why these params cannot start a decode leg (a gateway that sent the prefill leg's params, or
     * lost fields on the way), or null when the decode can fetch the KV they point at.
     */
    String decodeLegProblem() {
        if (!raw.isObject()) {
            return "kv_transfer_params: " + raw + " (expected: an object)";
        }
        if (!doRemotePrefill) {
            return "kv_transfer_params.do_remote_prefill: " + raw.get("do_remote_prefill")
                    + " (expected: true, the params of the prefill's answer)";
        }
        if (doRemoteDecode) {
            return "kv_transfer_params.do_remote_decode: true on a decode leg (expected: false)";
        }
        if (remoteHost == null || remotePort <= 0 || remotePort > 65535) {
            return "kv_transfer_params.remote_host/remote_port: " + raw.get("remote_host") + ":"
                    + raw.get("remote_port") + " (expected: the prefill's KV side channel)";
        }
        if (remoteRequestId == null || remoteEngineId == null) {
            return "kv_transfer_params.remote_request_id/remote_engine_id: missing (expected: as the prefill answered)";
        }
        if (remoteBlockIds == null) {
            return "kv_transfer_params.remote_block_ids: " + raw.get("remote_block_ids") + " (expected: a list)";
        }
        return null;
    }
}
