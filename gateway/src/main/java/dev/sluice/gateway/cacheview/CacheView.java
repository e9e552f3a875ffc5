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
    /** The whole view's bytes (routing.kv_events.max_memory); Long.MAX_VALUE: bounded by blocks only. */
    private final long maxBytes;
    private final long staleAfterNanos;
    private final LongSupplier nanoClock;
    private final LongAdder byEvents = new LongAdder();
    private final LongAdder byTree = new LongAdder();
    public CacheView(List<Worker> subscribed, long maxBlocksPerWorker, long staleAfterNanos, LongSupplier nanoClock) {
        this(subscribed, maxBlocksPerWorker, Long.MAX_VALUE, staleAfterNanos, nanoClock);
    }

    /**
     * @param maxBlocksPerWorker blocks each worker's DP rank may hold
     * @param maxBytes           bytes the whole view may take (its arrays, exactly); shared evenly by
     *                           the worker-ranks, the lower of the two bounds wins
     */
    public CacheView(List<Worker> subscribed, long maxBlocksPerWorker, long maxBytes, long staleAfterNanos,
                     LongSupplier nanoClock) {
        Map<Worker, WorkerBlocks> m = new LinkedHashMap<>();
        for (Worker w : subscribed) {
            m.put(w, new WorkerBlocks(maxBlocksPerWorker));
        }
        this.workers = Collections.unmodifiableMap(m);
        this.maxBlocksPerWorker = maxBlocksPerWorker;
        this.maxBytes = maxBytes;
        this.staleAfterNanos = staleAfterNanos;
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
        share();
    }

    /** Gives {@code w} a view fed by {@code ranks} streams, unless it has one. */
    public synchronized void add(Worker w, int ranks) {
        WorkerBlocks b = workers.get(w);
        if (b == null || b.ranks() != ranks) {
            Map<Worker, WorkerBlocks> m = new LinkedHashMap<>(workers);
            m.put(w, new WorkerBlocks(maxBlocksPerWorker, ranks));
            workers = Collections.unmodifiableMap(m);
            share();
        }
    }

    /** Drops the views of the workers not in {@code keep} (removed by a reload). */
    public synchronized void retain(Set<Worker> keep) {
        if (!keep.containsAll(workers.keySet())) {
            Map<Worker, WorkerBlocks> m = new LinkedHashMap<>(workers);
            m.keySet().retainAll(keep);
            workers = Collections.unmodifiableMap(m);
            share();
        }
    }

    /**
     * Shares the memory budget: every worker-rank gets the same block limit, the largest (up to
     * max_blocks_per_worker) at which all the views' arrays, each at its worst (every block a
     * distinct prefix), fit in max_memory. Called when workers come and go; the subscriber's thread
     * then fits each table to its new limit.
     */
    private void share() {
        int limit = limitFor(workers.values().stream().mapToInt(WorkerBlocks::ranks).toArray(), maxBlocksPerWorker,
                maxBytes);
        for (WorkerBlocks b : workers.values()) {
            b.limit(limit);
        }
    }

    /** The blocks per worker-rank that views of {@code ranks} can hold within {@code maxBytes} (at least 1). */
    static int limitFor(int[] ranks, long maxBlocks, long maxBytes) {
        long lo = 1;
        long hi = Math.min(maxBlocks, Integer.MAX_VALUE - 8);
        while (lo < hi) {
            long mid = (lo + hi + 1) >>> 1;
            if (bytesFor(ranks, mid) <= maxBytes) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return (int) lo;
    }

    private static long bytesFor(int[] ranks, long limit) {
        long sum = 0;
        for (int r : ranks) {
            sum += WorkerBlocks.bytesFor(r, limit);
        }
        return sum;
    }

    /** Bytes all the views' arrays take now, exactly. */
    public long bytes() {
        long sum = 0;
        for (WorkerBlocks b : workers.values()) {
            sum += b.bytes();
        }
        return sum;
    }

    /** The memory budget (Long.MAX_VALUE: none). */
    public long maxBytes() {
        return maxBytes;
    }

    /** The subscriber's thread: brings every view within its current limit. */
    void fit() {
        for (WorkerBlocks b : workers.values()) {
            b.fit();
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

    @Override
    public boolean fresh(Worker w) {
        return freshness(w) == WorkerBlocks.Freshness.FRESH;
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

    @Override
    public int[] rankMatch(Worker worker, long[] promptChain) {
        WorkerBlocks b = workers.get(worker);
        if (b == null || b.ranks() < 2 || b.blockSize() < 1 || promptChain.length == 0
                || b.freshness(nanoClock.getAsLong(), staleAfterNanos) != WorkerBlocks.Freshness.FRESH) {
            return dev.sluice.gateway.routing.RoutingPolicy.NO_RANKS;
        }
        int size = b.blockSize();
        int[] out = new int[b.ranks()];
        for (int r = 0; r < out.length; r++) {
            out[r] = b.rankMatchedBlocks(r, promptChain, size) * size;
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
