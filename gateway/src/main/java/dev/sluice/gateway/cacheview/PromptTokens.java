package dev.sluice.gateway.cacheview;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.CompletableFuture;

/**
 * A prompt's token ids as the worker will see them, to match against its KV events. Runs on the
 * request's event loop, like the prefix key: an implementation must be cheap and bounded (the
 * simulator's is linear in the prompt, cut at {@link #MAX_TOKENS}). One that is not (the model's own
 * tokenizer) does its work in {@link #ofAsync}, off the loop.
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

    /**
     * The ids, when they are ready: the server asks this on the event loop and comes back to it.
     * Completes normally, empty when the ids cannot be had (in time); by default {@link #of} at once.
     */
    default CompletableFuture<int[]> ofAsync(String route, JsonNode body) {
        return CompletableFuture.completedFuture(of(route, body));
    }
}
