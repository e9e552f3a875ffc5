package dev.sluice.gateway.admission;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.api.GenerationRequest;
import java.util.ArrayList;
import java.util.List;

/**
 * What a prefill will have to process, read from a request: the prompt texts (one per batch
 * item), token ids given directly, and how many chat messages carry template overhead.
 */
public record PromptText(List<String> texts, long explicitTokens, int messages, int copies) {

    public static PromptText of(GenerationRequest request) {
        JsonNode body = request.body();
        List<String> texts = new ArrayList<>();
        long ids = 0;
        int messages = 0;
        int copies = 1;
        switch (request.route()) {
            case CHAT_COMPLETIONS -> {
                StringBuilder all = new StringBuilder();
                for (JsonNode m : body.path("messages")) {
                    messages++;
                    appendContent(all, m.get("content"));
                }
                texts.add(all.toString());
                copies = Math.max(1, body.path("n").asInt(1));
            }
            case COMPLETIONS -> {
                ids += collect(body.get("prompt"), texts);
                copies = Math.max(1, body.path("n").asInt(1));
            }
            case GENERATE -> {
                JsonNode text = body.get("text");
                if (text != null && !text.isNull()) {
                    collect(text, texts);
                } else {
                    ids += collect(body.get("input_ids"), texts);
                }
            }
        }
        return new PromptText(List.copyOf(texts), ids, messages, copies);
    }

    /** UTF-8 bytes of all texts (what the byte-ratio estimator divides): counted, not encoded (no copy). */
    public long utf8Bytes() {
        long n = 0;
        for (String t : texts) {
            n += io.netty.buffer.ByteBufUtil.utf8Bytes(t);
        }
        return n;
    }

    private static long collect(JsonNode prompt, List<String> texts) {
        if (prompt == null || prompt.isNull()) {
            return 0;
        }
        if (prompt.isTextual()) {
            texts.add(prompt.asText());
            return 0;
        }
        long ids = 0;
        for (JsonNode e : prompt) {
            if (e.isTextual()) {
                texts.add(e.asText());
            } else if (e.isNumber()) {
                ids++;
            } else if (e.isArray()) {
                ids += e.size();
            }
        }
        return ids;
    }

    private static void appendContent(StringBuilder out, JsonNode content) {
        if (content == null || content.isNull()) {
            return;
        }
        if (content.isTextual()) {
            out.append(content.asText()).append('\n');
            return;
        }
        for (JsonNode part : content) {
            if (part.path("text").isTextual()) {
                out.append(part.get("text").asText()).append('\n');
            }
        }
    }
}
