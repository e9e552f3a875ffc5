package dev.sluice.gateway.metrics;

import dev.sluice.gateway.cacheview.CacheView;
import dev.sluice.gateway.cacheview.WorkerBlocks;
import dev.sluice.gateway.routing.Worker;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Meters of the workers' KV event view (docs/cache-affinity.md): events received, sequence gaps,
 * orphan blocks, index size and freshness per worker, and cache_aware decisions by the view that
 * made them.
 */
public final class CacheViewMetrics {
    private CacheViewMetrics() {
    }

    public static void bind(MeterRegistry registry, CacheView view) {
        for (Worker w : view.workers()) {
            WorkerBlocks b = view.of(w).orElseThrow();
            FunctionCounter.builder("sluice_kv_events_received", b, WorkerBlocks::events)
                    .description("KV cache events received from the worker (BlockStored, BlockRemoved, AllBlocksCleared)")
                    .tag("worker", w.name()).register(registry);
            FunctionCounter.builder("sluice_kv_events_gaps", b, WorkerBlocks::gaps)
                    .description("Sequence gaps in the worker's event stream (batches lost)")
                    .tag("worker", w.name()).register(registry);
            FunctionCounter.builder("sluice_kv_events_orphans", b, WorkerBlocks::orphans)
                    .description("Stored blocks whose parent block is unknown (stored before this gateway subscribed, "
                            + "or lost), not indexed")
                    .tag("worker", w.name()).register(registry);
            Gauge.builder("sluice_kv_index_blocks", b, WorkerBlocks::size)
                    .description("Blocks the worker's KV cache holds, as its events told")
                    .tag("worker", w.name()).strongReference(true).register(registry);
            Gauge.builder("sluice_kv_view_fresh", view, v -> v.freshness(w) == WorkerBlocks.Freshness.FRESH ? 1 : 0)
                    .description("1 when the worker's KV event view is fresh (cache_aware may route by it)")
                    .tag("worker", w.name()).strongReference(true).register(registry);
        }
        for (dev.sluice.gateway.routing.KvCacheView.Source s : dev.sluice.gateway.routing.KvCacheView.Source.values()) {
            FunctionCounter.builder("sluice_kv_view_decisions", view, v -> v.decisions(s))
                    .description("cache_aware decisions by the view that made them: kv_events (the workers' own events) "
                            + "or local_tree (the fallback)")
                    .tag("source", s.label()).register(registry);
        }
    }
}
