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
 */
public record RoutingRequest(String prefixKey, long tokens, PrefixTree.Key prefix) {
    public RoutingRequest {
        Objects.requireNonNull(prefixKey, "prefixKey");
        Objects.requireNonNull(prefix, "prefix");
    }

    public RoutingRequest(String prefixKey, long tokens) {
        this(prefixKey, tokens, PrefixTree.Key.of(prefixKey));
    }
}
