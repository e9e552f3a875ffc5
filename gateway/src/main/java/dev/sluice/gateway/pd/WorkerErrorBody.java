package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;

/**
 * Reads the message out of a worker's error body, whichever shape it has: OpenAI's
 * {@code {"error": {"message"}}}, SGLang's {@code {"object": "error", "message"}}, FastAPI's
 * {@code {"detail"}}, or plain text (truncated).
 */
public final class WorkerErrorBody {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_TEXT = 512;

    private WorkerErrorBody() {
    }

    public static String message(byte[] body) {
        String text = new String(body, StandardCharsets.UTF_8).trim();
        if (text.startsWith("data:")) {
            text = text.substring(5).trim();
            int end = text.indexOf('\n');
            if (end >= 0) {
                text = text.substring(0, end).trim();
            }
        }
        try {
            JsonNode root = JSON.readTree(text);
            if (root != null) {
                JsonNode error = root.get("error");
                if (error != null && error.isObject() && error.path("message").isTextual()) {
                    return error.get("message").asText();
                }
                if (error != null && error.isTextual()) {
                    return error.asText();
                }
                if (root.path("message").isTextual()) {
                    return root.get("message").asText();
                }
                if (root.has("detail")) {
                    return root.get("detail").toString();
                }
            }
        } catch (java.io.IOException notJson) {
            // fall through to the raw text
        }
        return text.length() > MAX_TEXT ? text.substring(0, MAX_TEXT) + "..." : text;
    }

    /**
     * The texts a KV transfer failure is reported with: SGLang's decode {@code "Decode transfer failed for
     * request ..."} and {@code "Decode handshake failed ..."}, its prefill {@code "Prefill transfer failed
     * ..."} and {@code "Prefill bootstrap failed for request ..."} (sgl-project/sglang
     * {@code python/sglang/srt/disaggregation/decode.py} {@code pop_transferred}, {@code prefill.py}
     * {@code pop_bootstrapped} / {@code process_disagg_prefill_inflight_queue}), the Mooncake backend's
     * {@code KVTransferError(bootstrap_room=...)}, NIXL's {@code "NIXL KVReceiver Exception"} /
     * {@code "NIXL KVSender Exception"} ({@code disaggregation/nixl/conn.py}).
     */
    private static final String[] KV_TRANSFER_TEXTS = {"KVTransferError", "KV transfer", "Decode transfer failed",
        "Decode handshake failed", "Prefill transfer failed", "bootstrap failed for request",
        "NIXL KVReceiver Exception", "NIXL KVSender Exception"};

    public static boolean isKvTransferFailure(String message) {
        for (String t : KV_TRANSFER_TEXTS) {
            if (message.contains(t)) {
                return true;
            }
        }
        return false;
    }

    /**
     * SGLang's answer when its own queue is full ({@code --max-queued-requests}, unified servers only:
     * scheduler.py {@code _abort_on_queued_limit}, a 503): load, not a sick worker.
     */
    public static boolean isQueueFull(String message) {
        return message.contains("The request queue is full");
    }
}
