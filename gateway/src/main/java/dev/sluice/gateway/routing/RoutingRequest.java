package dev.sluice.gateway.routing;

import java.util.Objects;

/**
 * What a routing policy knows about a request.
 *
 * @param prefixKey the rendered prompt as built by {@link PrefixKey} ("" when there is none)
 * @param tokens    the prompt tokens admission counted (or estimated) for it
 */
public record RoutingRequest(String prefixKey, long tokens) {
    public RoutingRequest {
        Objects.requireNonNull(prefixKey, "prefixKey");
    }
}
