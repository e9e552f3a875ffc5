package dev.sluice.gateway.routing;

import java.util.Objects;

/**
 * What a routing policy knows about a request. Built on the request's event loop, before the
 * admission lock: the prompt's key is prepared for the prefix tree there, so that under the lock
 * cache_aware only walks the tree.
 *
 * @param prefixKey the rendered prompt as built by {@link PrefixKey} ("" when there is none)
 * @param tokens    the prompt tokens admission counted (or estimated) for it
 * @param prefix    {@code prefixKey} in the prefix tree's form
 * @param promptIds the prompt's token ids as the worker will see them, to match against the
 *                  workers' KV events ({@code cacheview.PromptTokens}); empty when that view is off
 */
public record RoutingRequest(String prefixKey, long tokens, PrefixTree.Key prefix, int[] promptIds) {
    private static final int[] NO_IDS = new int[0];

    public RoutingRequest {
        Objects.requireNonNull(prefixKey, "prefixKey");
        Objects.requireNonNull(prefix, "prefix");
        Objects.requireNonNull(promptIds, "promptIds");
    }

    public RoutingRequest(String prefixKey, long tokens) {
        this(prefixKey, tokens, PrefixTree.Key.of(prefixKey), NO_IDS);
    }

    public RoutingRequest(String prefixKey, long tokens, int[] promptIds) {
        this(prefixKey, tokens, PrefixTree.Key.of(prefixKey), promptIds);
    }
}
