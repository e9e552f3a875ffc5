package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.routing.KvCacheView;
import dev.sluice.gateway.routing.Worker;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The prefill workers' KV caches as their own events describe them, one {@link WorkerBlocks} per
 * worker, shared by every gateway replica that subscribes to the same workers: the view
 * {@code cache_aware} routes by when it is fresh (docs/cache-affinity.md).
 *
 * <p>{@link #match}, {@link #usable} and {@link #dispatched} run under the admission lock and only
 * read (the indexes' concurrent maps and volatiles; the prompt was hashed before the lock); the
 * subscriber thread writes the indexes.
 */
public final class CacheView implements KvCacheView {

    /** Copied on write (a reload adds or removes workers), read without a lock. */
    private volatile Map<Worker, WorkerBlocks> workers;
    private final long maxBlocksPerWorker;
    private final long staleAfterNanos;
    private final LongSupplier nanoClock;
    private final LongAdder byEvents = new LongAdder();
    private final LongAdder byTree = new LongAdder();
    public CacheView(List<Worker> subscribed, long maxBlocksPerWorker, long staleAfterNanos, LongSupplier nanoClock) {
        Map<Worker, WorkerBlocks> m = new LinkedHashMap<>();
        for (Worker w : subscribed) {
            m.put(w, new WorkerBlocks(maxBlocksPerWorker));
        }
        this.workers = Collections.unmodifiableMap(m);
        this.maxBlocksPerWorker = maxBlocksPerWorker;
        this.staleAfterNanos = staleAfterNanos;
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
    }

    /** Gives {@code w} a view fed by {@code ranks} streams, unless it has one. */
    public synchronized void add(Worker w, int ranks) {
        WorkerBlocks b = workers.get(w);
        if (b == null || b.ranks() != ranks) {
            Map<Worker, WorkerBlocks> m = new LinkedHashMap<>(workers);
            m.put(w, new WorkerBlocks(maxBlocksPerWorker, ranks));
            workers = Collections.unmodifiableMap(m);
        }
    }

    /** Drops the views of the workers not in {@code keep} (removed by a reload). */
    public synchronized void retain(Set<Worker> keep) {
        if (!keep.containsAll(workers.keySet())) {
            Map<Worker, WorkerBlocks> m = new LinkedHashMap<>(workers);
            m.keySet().retainAll(keep);
            workers = Collections.unmodifiableMap(m);
        }
    }

    public Optional<WorkerBlocks> of(Worker w) {
        return Optional.ofNullable(workers.get(w));
    }

    @Override
    public long blocks(Worker w) {
        WorkerBlocks b = workers.get(w);
        return b == null ? 0 : b.size();
    }

    /** The subscribed workers, in config order. */
    public List<Worker> workers() {
        return new ArrayList<>(workers.keySet());
    }

    /** Whether every candidate's view is fresh: only then may a decision rest on it. */
    @Override
    public boolean usable(List<Worker> candidates) {
        long now = nanoClock.getAsLong();
        for (Worker w : candidates) {
            WorkerBlocks b = workers.get(w);
            if (b == null || b.freshness(now, staleAfterNanos) != WorkerBlocks.Freshness.FRESH) {
                return false;
            }
        }
        return true;
    }

    public WorkerBlocks.Freshness freshness(Worker w) {
        WorkerBlocks b = workers.get(w);
        return b == null ? WorkerBlocks.Freshness.MISSING : b.freshness(nanoClock.getAsLong(), staleAfterNanos);
    }

    /**
     * Prompt tokens each candidate holds as a cached prefix, index for index. Only lookups: the
     * prompt was hashed on its event loop ({@code promptChain}), and a block's key is one mix of
     * the chain state at its end, whatever the worker's block size.
     */
    @Override
    public int[] match(List<Worker> candidates, long[] promptChain) {
        int[] out = new int[candidates.size()];
        Map<Worker, WorkerBlocks> m = workers;
        for (int i = 0; i < out.length; i++) {
            WorkerBlocks b = m.get(candidates.get(i));
            if (b != null && b.blockSize() >= 1) {
                int size = b.blockSize();
                out[i] = b.matchedBlocks(promptChain, size) * size;
            }
        }
        return out;
    }

    /** {@code worker} was sent the prompt of {@code promptChain}: unless all its full blocks are held, expect events. */
    @Override
    public void dispatched(Worker worker, long[] promptChain) {
        WorkerBlocks b = workers.get(worker);
        if (b == null || promptChain.length == 0) {
            return;
        }
        int size = Math.max(1, b.blockSize());
        int full = promptChain.length / size;
        if (full > 0 && b.matchedBlocks(promptChain, size) < full) {
            b.expectEvents(nanoClock.getAsLong());
        }
    }

    /** Counts a cache_aware decision by the view that made it. */
    @Override
    public void decided(Source source) {
        (source == Source.KV_EVENTS ? byEvents : byTree).increment();
    }

    public long decisions(Source source) {
        return (source == Source.KV_EVENTS ? byEvents : byTree).sum();
    }
}
