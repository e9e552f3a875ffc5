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
 * @param promptChain {@link PromptChain#of} the ids, hashed here (on the event loop) so that the
 *                  KV event view's match under the admission lock only looks keys up
 */
public record RoutingRequest(String prefixKey, long tokens, PrefixTree.Key prefix, int[] promptIds,
                             long[] promptChain) {
    private static final int[] NO_IDS = new int[0];
    private static final long[] NO_CHAIN = new long[0];

    public RoutingRequest {
        Objects.requireNonNull(prefixKey, "prefixKey");
        Objects.requireNonNull(prefix, "prefix");
        Objects.requireNonNull(promptIds, "promptIds");
        Objects.requireNonNull(promptChain, "promptChain");
        if (promptChain.length != promptIds.length) {
            throw new IllegalArgumentException("promptChain: " + promptChain.length + " states (expected: one per id, "
                    + promptIds.length + ")");
        }
    }

    public RoutingRequest(String prefixKey, long tokens) {
        this(prefixKey, tokens, PrefixTree.Key.of(prefixKey), NO_IDS, NO_CHAIN);
    }

    public RoutingRequest(String prefixKey, long tokens, int[] promptIds) {
        this(prefixKey, tokens, PrefixTree.Key.of(prefixKey), promptIds, PromptChain.of(promptIds));
    }
}
