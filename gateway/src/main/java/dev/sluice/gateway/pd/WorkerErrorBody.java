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

    /** How a worker SSE error event starts (SGLang writes the space, others may not). */
    static final byte[] ERROR_EVENT = "data: {\"error\"".getBytes(StandardCharsets.US_ASCII);
    static final byte[] ERROR_EVENT_COMPACT = "data:{\"error\"".getBytes(StandardCharsets.US_ASCII);

    /**
     * Where an SSE error event ({@code data: {"error"...}) starts in {@code body}, or -1: a byte
     * scan, so a worker's successful answer is never decoded just to look for one.
     */
    public static int errorEventAt(byte[] body) {
        int a = indexOf(body, ERROR_EVENT);
        int b = indexOf(body, ERROR_EVENT_COMPACT);
        return a < 0 ? b : b < 0 ? a : Math.min(a, b);
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0, last = haystack.length - needle.length; i <= last; i++) {
            for (int k = 0; k < needle.length; k++) {
                if (haystack[i + k] != needle[k]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** HTTP status named inside an SSE error event ({@code "code": 500}), or 500. */
    public static int statusOfEvent(byte[] body) {
        String text = new String(body, StandardCharsets.UTF_8).trim();
        if (text.startsWith("data:")) {
            text = text.substring(5).trim();
        }
        try {
            JsonNode code = JSON.readTree(text).path("error").path("code");
            int c = code.asInt(500);
            return c >= 400 && c <= 599 ? c : 500;
        } catch (java.io.IOException | RuntimeException e) {
            return 500;
        }
    }

    /** SGLang names the failure {@code KVTransferError}; the bootstrap path fails with a bootstrap error. */
    public static boolean isKvTransferFailure(String message) {
        return message.contains("KVTransferError") || message.contains("KV transfer");
    }
}
