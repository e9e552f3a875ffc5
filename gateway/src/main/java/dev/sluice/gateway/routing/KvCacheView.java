package dev.sluice.gateway.routing;

import java.util.List;

/**
 * What {@code cache_aware} asks of a view of the prefill workers' KV caches built from their own
 * events ({@code cacheview.CacheView}, docs/cache-affinity.md). Declared here so that routing
 * depends on no view in particular (the view's package uses routing's {@link Worker}, not the
 * reverse). Called under the admission lock.
 */
public interface KvCacheView {
    /** Which view decided a cache_aware choice (the {@code source} label). */
    enum Source {
        KV_EVENTS, LOCAL_TREE;

        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * Whether {@code worker}'s view may stand for its cache now: subscribed, heard from, and not silent
     * past {@code stale_after} after work that should have stored blocks.
     */
    boolean fresh(Worker worker);

    /** Whether every one of these candidates' views is {@link #fresh}. */
    default boolean usable(List<Worker> candidates) {
        for (Worker w : candidates) {
            if (!fresh(w)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Prompt tokens each candidate holds as a cached prefix, in the candidates' order.
     *
     * @param promptChain the prompt's {@link PromptChain}, computed before the lock
     */
    int[] match(List<Worker> candidates, long[] promptChain);

    /**
     * Prompt tokens each DP rank of {@code worker} holds as a cached prefix, by rank, when its view is
     * fresh and fed per rank; empty otherwise.
     */
    default int[] rankMatch(Worker worker, long[] promptChain) {
        return RoutingPolicy.NO_RANKS;
    }

    /** {@code worker} was sent the prompt of {@code promptChain}. */
    void dispatched(Worker worker, long[] promptChain);

    /** Counts a cache_aware decision by the view that made it. */
    void decided(Source source);

    /** Blocks the view holds for {@code worker} (0 when it is not subscribed): ties go to the smallest cache. */
    long blocks(Worker worker);
}
