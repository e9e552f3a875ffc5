package dev.sluice.gateway.cacheview;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A prompt's token ids as the worker will see them, to match against its KV events. Runs on the
 * request's event loop, like the prefix key: an implementation must be cheap and bounded (the
 * simulator's is linear in the prompt, cut at {@link #MAX_TOKENS}).
 */
public interface PromptTokens {
    /** Ids past this are not computed (the match of a longer prompt is cut there). */
    int MAX_TOKENS = 32_768;

    /** No ids: the KV event view is off. */
    PromptTokens NONE = (route, body) -> new int[0];

    /**
     * @param route the route's label: chat_completions, completions or generate
     * @return the ids, empty when this prompt cannot be tokenized here
     */
    int[] of(String route, JsonNode body);
}
