package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * With logprobs asked for, the input-token logprobs are computed by the prefill, not the decode:
 * the prefill's {@code meta_info.input_token_logprobs} is put in front of the decode's, per batch
 * item, in every streamed event and in the final JSON (what SGLang's PD routers do).
 */
public final class LogprobMerger {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final List<JsonNode> prefillLogprobs;

    private LogprobMerger(List<JsonNode> prefillLogprobs) {
        this.prefillLogprobs = prefillLogprobs;
    }

    /**
     * Reads the prefill's whole response (JSON, or SSE whose first data event counts).
     *
     * @throws IOException when the prefill's body is not what SGLang sends
     */
    public static LogprobMerger fromPrefill(byte[] body) throws IOException {
        String text = new String(body, StandardCharsets.UTF_8).trim();
        if (text.startsWith("data:")) {
            int end = text.indexOf("\n");
            text = (end < 0 ? text.substring(5) : text.substring(5, end)).trim();
        }
        JsonNode root = JSON.readTree(text);
        List<JsonNode> items = new ArrayList<>();
        if (root != null && root.isArray()) {
            root.forEach(item -> items.add(item.path("meta_info").path("input_token_logprobs")));
        } else if (root != null && root.isObject()) {
            items.add(root.path("meta_info").path("input_token_logprobs"));
        } else {
            throw new IOException("prefill response is neither a JSON object nor a list");
        }
        return new LogprobMerger(items);
    }

    /** Merges into a decode JSON document (object or batch list) in place. */
    public JsonNode merge(JsonNode decode) {
        if (decode.isArray()) {
            for (int i = 0; i < decode.size(); i++) {
                mergeItem(decode.get(i), i);
            }
        } else {
            mergeItem(decode, decode.path("index").asInt(0));
        }
        return decode;
    }

    /** Merges into one SSE data payload; {@code [DONE]} and non-JSON payloads pass unchanged. */
    public String mergeEvent(String payload) throws IOException {
        String trimmed = payload.trim();
        if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) {
            return payload;
        }
        return JSON.writeValueAsString(merge(JSON.readTree(trimmed)));
    }

    private void mergeItem(JsonNode item, int index) {
        if (!item.isObject() || index >= prefillLogprobs.size()) {
            return;
        }
        JsonNode prefix = prefillLogprobs.get(index);
        JsonNode meta = item.get("meta_info");
        if (!prefix.isArray() || meta == null || !meta.isObject()) {
            return;
        }
        ArrayNode merged = JSON.createArrayNode();
        merged.addAll((ArrayNode) prefix);
        JsonNode own = meta.get("input_token_logprobs");
        if (own != null && own.isArray()) {
            merged.addAll((ArrayNode) own);
        }
        ((ObjectNode) meta).set("input_token_logprobs", merged);
    }
}
