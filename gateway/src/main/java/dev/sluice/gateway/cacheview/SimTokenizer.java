package dev.sluice.gateway.cacheview;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The testbed simulator's tokenizer, reproduced (testbed {@code sim/PromptBlocks.tokens} and
 * {@code renderChat}): the prompt rendered as the simulator renders it (text as is; a chat as
 * {@code role: content\n} per message, array content parts concatenated), cut into groups of 4
 * chars, each group's id the 32-bit FNV-1a hash of its UTF-16 chars masked to 31 bits. Exact for
 * the simulator and meaningless for a real model, whose ids come from its tokenizer and chat
 * template. A prompt given as token ids (completions id arrays, /generate {@code input_ids}) is
 * used as it is, for any server. Of a batch only the first prompt counts.
 */
public final class SimTokenizer implements PromptTokens {
    private static final int MAX_CHARS = 4 * MAX_TOKENS;

    @Override
    public int[] of(String route, JsonNode body) {
        if (route == null || body == null || !body.isObject()) {
            return new int[0];
        }
        return switch (route) {
            case "chat_completions" -> text(chat(body.path("messages")));
            case "completions" -> prompt(body.get("prompt"));
            case "generate" -> {
                JsonNode text = body.get("text");
                yield text != null && !text.isNull() ? prompt(text) : prompt(body.get("input_ids"));
            }
            default -> new int[0];
        };
    }

    private static int[] prompt(JsonNode p) {
        if (p == null || p.isNull()) {
            return new int[0];
        }
        if (p.isTextual()) {
            return text(p.asText());
        }
        if (!p.isArray() || p.isEmpty()) {
            return new int[0];
        }
        JsonNode first = p.get(0);
        if (first.isTextual() || first.isArray()) {
            return prompt(first);
        }
        int n = Math.min(p.size(), MAX_TOKENS);
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = (int) p.get(i).asLong();
        }
        return ids;
    }

    private static String chat(JsonNode messages) {
        StringBuilder b = new StringBuilder();
        for (JsonNode m : messages) {
            if (b.length() >= MAX_CHARS) {
                break;
            }
            b.append(m.path("role").asText("")).append(": ");
            JsonNode content = m.get("content");
            if (content != null && content.isArray()) {
                for (JsonNode part : content) {
                    b.append(part.isTextual() ? part.asText() : part.path("text").asText(""));
                }
            } else if (content != null && !content.isNull()) {
                b.append(content.asText());
            }
            b.append('\n');
        }
        return b.toString();
    }

    /** Ids of {@code text}'s whole 4-char groups. */
    static int[] text(CharSequence text) {
        int n = Math.min(text.length(), MAX_CHARS) / 4;
        int[] ids = new int[n];
        for (int t = 0; t < n; t++) {
            int h = 0x811c9dc5;
            for (int i = 4 * t, end = i + 4; i < end; i++) {
                h = (h ^ text.charAt(i)) * 0x01000193;
            }
            ids[t] = h & 0x7fffffff;
        }
        return ids;
    }

}
