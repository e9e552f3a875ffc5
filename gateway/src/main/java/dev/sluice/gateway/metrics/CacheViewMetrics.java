package dev.sluice.gateway.metrics;

import dev.sluice.gateway.cacheview.CacheView;
import dev.sluice.gateway.cacheview.WorkerBlocks;
import dev.sluice.gateway.routing.KvCacheView;
import dev.sluice.gateway.routing.Worker;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Meters of the workers' KV event view (docs/cache-affinity.md): events received, sequence gaps,
 * orphan blocks, resubscriptions, index size and freshness per worker, and cache_aware decisions by
 * the view that made them. {@link #follow} binds the workers a reload added and removes those it
 * retired; called from one thread at a time.
 */
public final class CacheViewMetrics {
    private final MeterRegistry registry;
    private final CacheView view;
    /** Per worker, the view its meters read and the meters. */
    private final Map<Worker, Bound> bound = new HashMap<>();

    private record Bound(WorkerBlocks blocks, List<Meter> meters) {
    }

    public CacheViewMetrics(MeterRegistry registry, CacheView view) {
        this.registry = registry;
        this.view = view;
        for (KvCacheView.Source s : KvCacheView.Source.values()) {
            FunctionCounter.builder("sluice_kv_view_decisions", view, v -> v.decisions(s))
                    .description("cache_aware decisions by the view that made them: kv_events (the workers' own events) "
                            + "or local_tree (the fallback)")
                    .tag("source", s.label()).register(registry);
        }
        follow();
    }

    /**
     * Meters for the view's workers now: new ones bound, retired ones removed, and those whose view
     * was made anew (the worker reported another {@code dp_size}: one stream per rank) bound again.
     */
    public synchronized void follow() {
        List<Worker> now = view.workers();
        bound.entrySet().removeIf(e -> {
            boolean gone = !now.contains(e.getKey()) || view.of(e.getKey()).orElse(null) != e.getValue().blocks();
            if (gone) {
                e.getValue().meters().forEach(registry::remove);
            }
            return gone;
        });
        for (Worker w : now) {
            if (!bound.containsKey(w)) {
                view.of(w).ifPresent(b -> bound.put(w, new Bound(b, bind(w, b))));
            }
        }
    }

    private static double age(long lastNanos) {
        return lastNanos == 0 ? Double.NaN : (System.nanoTime() - lastNanos) / 1e9;
    }

    private List<Meter> bind(Worker w, WorkerBlocks b) {
        List<Meter> m = new ArrayList<>();
        m.add(FunctionCounter.builder("sluice_kv_events_received", b, WorkerBlocks::events)
                .description("KV cache events received from the worker (BlockStored, BlockRemoved, AllBlocksCleared)")
                .tag("worker", w.name()).register(registry));
        m.add(FunctionCounter.builder("sluice_kv_events_gaps", b, WorkerBlocks::gaps)
                .description("Sequence gaps in the worker's event streams (batches lost; the rank's blocks are "
                        + "forgotten and the view is stale while it fills again)")
                .tag("worker", w.name()).register(registry));
        m.add(FunctionCounter.builder("sluice_kv_events_orphans", b, WorkerBlocks::orphans)
                .description("Stored blocks whose parent block is unknown (stored before this gateway subscribed, "
                        + "or lost), not indexed")
                .tag("worker", w.name()).register(registry));
        m.add(FunctionCounter.builder("sluice_kv_events_resubscribes", b, WorkerBlocks::resubscribes)
                .description("Event streams of the worker closed and opened again because they stayed silent while "
                        + "the worker was sent work that should have stored blocks, or because the subscriber's ZMQ "
                        + "context moved no data (its liveness probe late: every stream opened on a new context)")
                .tag("worker", w.name()).register(registry));
        m.add(Gauge.builder("sluice_kv_index_blocks", b, WorkerBlocks::size)
                .description("Blocks the worker's KV cache holds, as its events told, summed over its DP ranks (each rank "
                        + "its own cache: a prefix cached on two ranks counts twice)")
                .tag("worker", w.name()).strongReference(true).register(registry));
        m.add(Gauge.builder("sluice_kv_view_fresh", view, v -> v.freshness(w) == WorkerBlocks.Freshness.FRESH ? 1 : 0)
                .description("1 when the worker's KV event view is fresh (cache_aware may route by it)")
                .tag("worker", w.name()).strongReference(true).register(registry));
        m.add(Gauge.builder("sluice_kv_view_bytes", b, WorkerBlocks::bytes)
                .description("Bytes the worker's KV view takes (its primitive tables, exactly); the view's total "
                        + "stays within routing.kv_events.max_memory")
                .tag("worker", w.name()).strongReference(true).register(registry));
        m.add(FunctionCounter.builder("sluice_kv_view_evicted", b, WorkerBlocks::evicted)
                .description("Blocks the view forgot to stay within its limit (max_blocks_per_worker or its share of "
                        + "max_memory), least recently stored first")
                .tag("worker", w.name()).register(registry));
        m.add(FunctionCounter.builder("sluice_kv_events_malformed", b, WorkerBlocks::malformed)
                .description("Event frames that could not be read (bad framing, too large, undecodable), skipped")
                .tag("worker", w.name()).register(registry));
        for (int r = 0; r < b.ranks(); r++) {
            int rank = r;
            String label = String.valueOf(r);
            m.add(Gauge.builder("sluice_kv_events_up", b, x -> x.up(rank) ? 1 : 0)
                    .description("1 when the worker's event stream of this DP rank is connected to its publisher "
                            + "(ZMTP handshake done), 0 while it resolves, connects or reconnects")
                    .tags("worker", w.name(), "rank", label).strongReference(true).register(registry));
            m.add(Gauge.builder("sluice_kv_events_last_event_age_seconds", b, x -> age(x.lastEventNanos(rank)))
                    .description("Seconds since the last event batch of this DP rank (NaN: none yet); an idle worker "
                            + "publishes nothing, so read it with sluice_kv_events_up")
                    .tags("worker", w.name(), "rank", label).strongReference(true).register(registry));
        }
        return m;
    }
}
