package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;

/**
 * {@code /v1/chat/completions} and {@code /v1/completions} as SGLang's OpenAI-compatible server
 * writes them, with every field the official OpenAI SDKs require. The id is the request's rid.
 */
final class OpenAiFormat implements WireFormat {
    static final OpenAiFormat INSTANCE = new OpenAiFormat();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private OpenAiFormat() {
    }

    private static boolean chat(Exchange ex) {
        return ex.request.route() == Route.CHAT;
    }

    private ObjectNode envelope(Exchange ex, boolean chunk) {
        ObjectNode o = F.objectNode();
        o.put("id", ex.request.rid());
        o.put("object", chat(ex) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
        o.put("created", ex.createdEpochSeconds);
        o.put("model", ex.model());
        o.putNull("system_fingerprint");
        return o;
    }

    @Override
    public ObjectNode tokenEvent(Exchange ex, SimItem item, boolean last) {
        int k = item.generated - 1;
        String tok = SimItem.token(k);
        ObjectNode o = envelope(ex, true);
        ObjectNode choice = o.putArray("choices").addObject();
        choice.put("index", item.index);
        if (chat(ex)) {
            ObjectNode delta = choice.putObject("delta");
            if (k == 0) {
                delta.put("role", "assistant");
            }
            delta.put("content", tok);
        } else {
            choice.put("text", tok);
        }
        if (ex.request.logprobs()) {
            choice.set("logprobs", logprobs(ex, k, k + 1, item.text.length() - tok.length()));
        } else {
            choice.putNull("logprobs");
        }
        choice.putNull("finish_reason");
        return o;
    }

    @Override
    public ObjectNode finishEvent(Exchange ex, SimItem item) {
        ObjectNode o = envelope(ex, true);
        ObjectNode choice = o.putArray("choices").addObject();
        choice.put("index", item.index);
        if (chat(ex)) {
            ObjectNode delta = choice.putObject("delta");
            if (item.generated == 0) {
                delta.put("role", "assistant");
                delta.put("content", "");
            }
        } else {
            choice.put("text", "");
        }
        choice.putNull("logprobs");
        choice.put("finish_reason", item.finishReason);
        return o;
    }

    @Override
    public ObjectNode usageEvent(Exchange ex) {
        ObjectNode o = envelope(ex, true);
        o.putArray("choices");
        o.set("usage", usage(ex));
        return o;
    }

    @Override
    public JsonNode fullResponse(Exchange ex) {
        ObjectNode o = envelope(ex, false);
        ArrayNode choices = o.putArray("choices");
        for (SimItem item : ex.items) {
            ObjectNode choice = choices.addObject();
            choice.put("index", item.index);
            if (chat(ex)) {
                ObjectNode msg = choice.putObject("message");
                msg.put("role", "assistant");
                msg.put("content", item.text.toString());
                msg.putNull("refusal");
            } else {
                choice.put("text", item.text.toString());
            }
            if (ex.request.logprobs()) {
                choice.set("logprobs", logprobs(ex, 0, item.generated, 0));
            } else {
                choice.putNull("logprobs");
            }
            choice.put("finish_reason", item.finishReason == null ? "length" : item.finishReason);
        }
        o.set("usage", usage(ex));
        return o;
    }

    private static ObjectNode usage(Exchange ex) {
        ObjectNode u = F.objectNode();
        int prompt = ex.promptTokensForUsage();
        int completion = ex.completionTokens();
        u.put("prompt_tokens", prompt);
        u.put("completion_tokens", completion);
        u.put("total_tokens", prompt + completion);
        return u;
    }

    /** Logprobs of tokens [from, to): chat's {@code content} list or completions' parallel arrays. */
    private static ObjectNode logprobs(Exchange ex, int from, int to, int textOffset) {
        ObjectNode lp = F.objectNode();
        if (chat(ex)) {
            ArrayNode content = lp.putArray("content");
            for (int k = from; k < to; k++) {
                ObjectNode t = content.addObject();
                String tok = SimItem.token(k);
                t.put("token", tok);
                t.put("logprob", SimItem.logprob(k));
                ArrayNode bytes = t.putArray("bytes");
                for (byte b : tok.getBytes(StandardCharsets.UTF_8)) {
                    bytes.add(b & 0xff);
                }
                t.putArray("top_logprobs");
            }
            lp.putNull("refusal");
        } else {
            ArrayNode tokens = lp.putArray("tokens");
            ArrayNode values = lp.putArray("token_logprobs");
            ArrayNode offsets = lp.putArray("text_offset");
            lp.putArray("top_logprobs");
            int offset = textOffset;
            for (int k = from; k < to; k++) {
                tokens.add(SimItem.token(k));
                values.add(SimItem.logprob(k));
                offsets.add(offset);
                offset += SimItem.token(k).length();
            }
        }
        return lp;
    }
}
