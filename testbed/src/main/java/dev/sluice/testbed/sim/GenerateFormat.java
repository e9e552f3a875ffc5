package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * SGLang's native {@code /generate}: {@code {"text": <cumulative>, "meta_info": {...}}}, a list of
 * those for a batch. Stream events carry the text so far; the last token's event has the finish reason.
 */
final class GenerateFormat implements WireFormat {
    static final GenerateFormat INSTANCE = new GenerateFormat();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private GenerateFormat() {
    }

    @Override
    public ObjectNode tokenEvent(Exchange ex, SimItem item, boolean last) {
        return itemObject(ex, item, last);
    }

    @Override
    public ObjectNode finishEvent(Exchange ex, SimItem item) {
        // the last token's event already carried "length"; an item with no tokens or an abort needs its own
        boolean saidSo = item.generated > 0 && "length".equals(item.finishReason);
        return saidSo ? null : itemObject(ex, item, true);
    }

    @Override
    public ObjectNode usageEvent(Exchange ex) {
        return null;
    }

    @Override
    public JsonNode fullResponse(Exchange ex) {
        if (!ex.request.batch()) {
            return itemObject(ex, ex.items.get(0), true);
        }
        ArrayNode list = F.arrayNode();
        ex.items.forEach(item -> list.add(itemObject(ex, item, true)));
        return list;
    }

    private static ObjectNode itemObject(Exchange ex, SimItem item, boolean finished) {
        ObjectNode o = F.objectNode();
        if (ex.request.batch()) {
            o.put("index", item.index);
        }
        o.put("text", item.text.toString());
        ObjectNode meta = o.putObject("meta_info");
        meta.put("id", item.rid);
        String reason = item.finishReason == null ? "length" : item.finishReason;
        if (!finished) {
            meta.putNull("finish_reason");
        } else if (reason.equals("length")) {
            meta.putObject("finish_reason").put("type", "length").put("length", item.generated);
        } else {
            // FINISH_ABORT.to_json (schedule_batch.py): type, message, status_code, err_type
            ObjectNode fr = meta.putObject("finish_reason");
            fr.put("type", reason);
            fr.put("message", item.abortMessage != null ? item.abortMessage : "Abort request " + item.rid);
            if (item.abortStatus != null) {
                fr.put("status_code", item.abortStatus);
            } else {
                fr.putNull("status_code");
            }
            fr.putNull("err_type");
        }
        meta.put("prompt_tokens", item.promptTokens);
        meta.put("completion_tokens", item.generated);
        meta.put("cached_tokens", item.cachedTokens);
        meta.put("e2e_latency", ex.secondsSinceReceived());
        if (ex.request.logprobs()) {
            // the prefill computes the prompt's logprobs; a decode has none (the router merges them in)
            ArrayNode input = meta.putArray("input_token_logprobs");
            if (ex.worker.isPrefill()) {
                for (int k = 0; k < item.promptTokens; k++) {
                    input.addArray().add(SimItem.logprob(k)).add(SimItem.tokenId(k)).addNull();
                }
            }
            ArrayNode output = meta.putArray("output_token_logprobs");
            for (int k = 0; k < item.generated; k++) {
                output.addArray().add(SimItem.logprob(k)).add(SimItem.tokenId(k)).addNull();
            }
        }
        return o;
    }
}
