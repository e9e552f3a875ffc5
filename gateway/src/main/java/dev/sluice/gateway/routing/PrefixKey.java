package dev.sluice.gateway.routing;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The routing key of a request for prefix affinity: the prompt as the worker will see it, in
 * order, so that two requests sharing a prompt prefix share a key prefix (and the worker's
 * prefix cache, SGLang radix/HiCache or vLLM automatic prefix caching, gets hits).
 *
 * <p>Unlike sgl-model-gateway, which keys a chat on its first message only, a chat is keyed on
 * its tools and every message in order, so that the worker that saw the longest shared history
 * wins. Token ids ({@code input_ids}, or a completions prompt of ids) become one character each
 * ({@code id & 0xFFFF}): shared id prefixes share characters; the rare collisions of large ids
 * are harmless, since this is affinity, not correctness. Of a batch only the first prompt counts.
 */
public final class PrefixKey {
    /** Keys are cut here: bounds the cost of building and matching one (about 16K tokens of text). */
    public static final int MAX_CHARS = 65_536;

    private PrefixKey() {
    }

    /**
     * @param route the route's label: chat_completions, completions or generate (as in
     *              {@code api.GenerationRoute#label()}); anything else gives ""
     */
    public static String of(String route, JsonNode body) {
        if (route == null || body == null || !body.isObject()) {
            return "";
        }
        StringBuilder key = new StringBuilder();
        switch (route) {
            case "chat_completions" -> chat(key, body);
            case "completions" -> prompt(key, body.get("prompt"));
            case "generate" -> {
                JsonNode text = body.get("text");
                prompt(key, text != null && !text.isNull() ? text : body.get("input_ids"));
            }
            default -> {
            }
        }
        return key.length() > MAX_CHARS ? key.substring(0, MAX_CHARS) : key.toString();
    }

    private static void chat(StringBuilder key, JsonNode body) {
        JsonNode tools = body.get("tools");
        if (tools != null && tools.isArray() && !tools.isEmpty()) {
            // chat templates render tool definitions ahead of the messages: they are prefix too
            append(key, "tools\n");
            append(key, tools.toString());
            append(key, "\n");
        }
        for (JsonNode m : body.path("messages")) {
            if (full(key)) {
                return;
            }
            append(key, m.path("role").asText(""));
            append(key, "\n");
            content(key, m.get("content"));
            append(key, "\n");
        }
    }

    private static void content(StringBuilder key, JsonNode content) {
        if (content == null || content.isNull()) {
            return;
        }
        if (content.isTextual()) {
            append(key, content.asText());
            return;
        }
        for (JsonNode part : content) {
            if (part.path("text").isTextual()) {
                append(key, part.get("text").asText());
            } else if (part.path("image_url").path("url").isTextual()) {
                // the image is part of the cached prefix; its URL tells images apart well enough
                append(key, part.get("image_url").get("url").asText());
            }
        }
    }

    /** A prompt: a string, token ids, or a batch of either (first item). */
    private static void prompt(StringBuilder key, JsonNode p) {
        if (p == null || p.isNull()) {
            return;
        }
        if (p.isTextual()) {
            append(key, p.asText());
            return;
        }
        if (!p.isArray() || p.isEmpty()) {
            return;
        }
        JsonNode first = p.get(0);
        if (first.isTextual() || first.isArray()) {
            prompt(key, first);
            return;
        }
        for (JsonNode id : p) {
            if (full(key)) {
                return;
            }
            key.append((char) (id.asLong() & 0xFFFF));
        }
    }

    private static boolean full(StringBuilder key) {
        return key.length() >= MAX_CHARS;
    }

    /** Appends at most what still fits, so a huge message is never copied whole. */
    private static void append(StringBuilder key, String s) {
        int room = MAX_CHARS - key.length();
        if (room > 0) {
            key.append(s, 0, Math.min(room, s.length()));
        }
    }
}
