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

    /** Whether the view may decide among these candidates: every one subscribed and fresh. */
    boolean usable(List<Worker> candidates);

    /** Prompt tokens of {@code promptIds} each candidate holds, in the candidates' order. */
    int[] match(List<Worker> candidates, int[] promptIds);

    /** {@code worker} was sent {@code promptIds}. */
    void dispatched(Worker worker, int[] promptIds);

    /** Counts a cache_aware decision by the view that made it. */
    void decided(Source source);

    /** Blocks the view holds for {@code worker} (0 when it is not subscribed): ties go to the smallest cache. */
    long blocks(Worker worker);
}
