package dev.sluice.gateway.cacheview;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What one worker's KV cache holds, as its events told: the chain keys ({@link BlockChain}) of its
 * cached blocks, bounded to {@link #limit} blocks per DP rank (past it the least recently stored
 * are forgotten: the view under-claims, never over-claims), and how fresh that knowledge is.
 * Primitive tables ({@link EngineBlockTable}, {@link ChainKeys}): at most {@link #bytesFor} bytes,
 * about 45 a block (docs/cache-affinity.md, "KV view memory budget").
 *
 * <p>A worker with attention data parallelism publishes one stream per DP rank, each rank its own
 * radix cache: each rank has its own engine-hash map and its own chain keys (an
 * {@code AllBlocksCleared}, a restart or a gap on one rank forgets that rank's blocks only). The
 * worker holds a prefix when one of its ranks does ({@link #matchedBlocks}: the longest rank's
 * match), and a request routed per rank goes to the rank that holds it ({@link #rankMatchedBlocks}):
 * a prefix cached on one rank is no hit on another.
 *
 * <p>Threads: {@link #apply} and the other writers run on the subscriber's thread only (the engine
 * hash tables are confined to it); {@link #matchedBlocks}, {@link #freshness} and the counters are read
 * from any thread (the admission lock's, metrics, admin): the chain keys are read optimistically
 * ({@link ChainKeys}).
 */
public final class WorkerBlocks {
    /** How far this worker's view can be trusted. */
    public enum Freshness {
        /** Events have come, and none is overdue. */
        FRESH,
        /** No event yet: the worker may publish nothing at all. */
        MISSING,
        /**
         * Sent work that should have stored blocks, and silent for longer than stale_after since; or
         * rebuilding after lost events (a sequence gap), for stale_after.
         */
        STALE;

        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final EngineBlockTable[] byEngineHash;
    /** Per DP rank, chain key to how many of its engine blocks carry it; read from any thread. */
    private final ChainKeys[] keys;
    /** Blocks each rank may hold; lowered or raised by the view's memory budget ({@link CacheView}), any thread. */
    private volatile int limit;
    /** The limit the tables were last fitted to; the subscriber's thread only. */
    private int fittedLimit;
    /** Bytes of the tables' arrays, as of the last write (exact: {@link ArrayBytes}). */
    private volatile long bytes;
    private final AtomicIntegerArray rankUp;
    private final AtomicLongArray rankHeardNanos;
    private volatile int blockSize;
    private volatile long lastEventNanos;
    private volatile long awaitingSince;
    /** Until when (nanos) the view is rebuilding after lost events; 0: not. */
    private volatile long rebuildingUntil;
    final AtomicLong events = new AtomicLong();
    final AtomicLong batches = new AtomicLong();
    final AtomicLong gaps = new AtomicLong();
    final AtomicLong orphans = new AtomicLong();
    final AtomicLong malformed = new AtomicLong();
    final AtomicLong resubscribes = new AtomicLong();
    final AtomicLong evicted = new AtomicLong();

    public WorkerBlocks(long maxBlocks) {
        this(maxBlocks, 1);
    }

    /** @param ranks the worker's DP ranks (one event stream each), {@code maxBlocks} bounding each */
    public WorkerBlocks(long maxBlocks, int ranks) {
        this.limit = (int) Math.max(1, Math.min(Integer.MAX_VALUE - 8, maxBlocks));
        this.fittedLimit = limit;
        this.byEngineHash = new EngineBlockTable[ranks];
        for (int r = 0; r < ranks; r++) {
            byEngineHash[r] = new EngineBlockTable(limit);
        }
        this.keys = new ChainKeys[ranks];
        for (int r = 0; r < ranks; r++) {
            keys[r] = new ChainKeys(limit);
        }
        this.rankUp = new AtomicIntegerArray(ranks);
        this.rankHeardNanos = new AtomicLongArray(ranks);
        this.bytes = measure();
    }

    /**
     * Exact bytes of a view of {@code ranks} DP ranks holding {@code limit} blocks each, every block
     * a distinct prefix (the most its arrays ever take): what the memory budget is divided by.
     */
    public static long bytesFor(int ranks, long limit) {
        return ranks * (EngineBlockTable.bytesFor(limit) + ChainKeys.bytesFor(limit));
    }

    /** The DP ranks (event streams) this worker's view is fed by. */
    public int ranks() {
        return byEngineHash.length;
    }

    /** Blocks each rank may hold now. */
    public int limit() {
        return limit;
    }

    /**
     * Sets the blocks each rank may hold (the view's budget was shared again); the tables follow on
     * the subscriber's thread ({@link #fit}), forgetting the least recently stored first. Any thread.
     */
    void limit(int blocksPerRank) {
        limit = Math.max(1, blocksPerRank);
    }

    /** Bytes the view's arrays take now, exactly. */
    public long bytes() {
        return bytes;
    }

    /** Applies one batch of rank 0 in order; {@code nowNanos} marks the worker as heard from. */
    public void apply(KvEventBatch batch, long nowNanos) {
        apply(0, batch, nowNanos);
    }

    /** Applies one batch of DP rank {@code rank} in order; {@code nowNanos} marks the worker as heard from. */
    public void apply(int rank, KvEventBatch batch, long nowNanos) {
        fit();
        EngineBlockTable engine = byEngineHash[rank];
        ChainKeys held = keys[rank];
        for (KvEvent e : batch.events()) {
            events.incrementAndGet();
            if (e instanceof KvEvent.Stored s) {
                stored(engine, held, s);
            } else if (e instanceof KvEvent.Removed r) {
                for (long h : r.hashes()) {
                    int entry = engine.find(h);
                    if (entry >= 0) {
                        held.release(BlockChain.key(engine.state(entry)));
                        engine.remove(entry);
                    }
                }
            } else {
                clear(rank);
            }
        }
        bytes = measure();
        batches.incrementAndGet();
        rankHeardNanos.set(rank, nowNanos);
        lastEventNanos = nowNanos;
        awaitingSince = 0;
    }

    private void stored(EngineBlockTable engine, ChainKeys held, KvEvent.Stored s) {
        int size = s.blockSize();
        if (size < 1 || s.tokens().length < (long) s.hashes().length * size) {
            malformed.incrementAndGet();
            return;
        }
        long parent = BlockChain.ROOT;
        if (s.parent().isPresent()) {
            int p = engine.find(s.parent().getAsLong());
            if (p < 0) {
                // stored before we subscribed, or its events were lost: cannot be placed
                orphans.addAndGet(s.hashes().length);
                return;
            }
            parent = engine.state(p);
        }
        blockSize = size;
        int max = limit;
        for (int i = 0; i < s.hashes().length; i++) {
            long state = BlockChain.next(parent, s.tokens(), i * size, (i + 1) * size);
            int entry = engine.find(s.hashes()[i]);
            if (entry >= 0) {
                held.release(BlockChain.key(engine.state(entry)));
                engine.restore(entry, state);
            } else {
                while (engine.size() >= max) {
                    evictOldest(engine, held);
                }
                engine.insert(s.hashes()[i], state, max);
            }
            held.add(BlockChain.key(state), max);
            parent = state;
        }
    }

    private void evictOldest(EngineBlockTable engine, ChainKeys held) {
        int oldest = engine.oldest();
        held.release(BlockChain.key(engine.state(oldest)));
        engine.remove(oldest);
        evicted.incrementAndGet();
    }

    /**
     * Brings the tables to the current {@link #limit}: past it, each rank forgets its least recently
     * stored blocks and its arrays shrink to what the limit needs. The subscriber's thread only.
     */
    void fit() {
        int max = limit;
        if (max == fittedLimit) {
            return;
        }
        for (int r = 0; r < byEngineHash.length; r++) {
            EngineBlockTable engine = byEngineHash[r];
            while (engine.size() > max) {
                evictOldest(engine, keys[r]);
            }
            if (engine.capacity() > max) {
                engine.resize(max);
            }
            keys[r].shrinkTo(max);
        }
        fittedLimit = max;
        bytes = measure();
    }

    private long measure() {
        long b = 0;
        for (int r = 0; r < byEngineHash.length; r++) {
            b += byEngineHash[r].bytes() + keys[r].bytes();
        }
        return b;
    }

    /** Forgets every rank's blocks. */
    public void clear() {
        for (int r = 0; r < byEngineHash.length; r++) {
            clear(r);
        }
    }

    /** Forgets one rank's blocks (its AllBlocksCleared, or its publisher restarted). */
    public void clear(int rank) {
        byEngineHash[rank].clear(limit);
        keys[rank].clear(limit);
        bytes = measure();
    }

    /**
     * Batches of {@code rank} were lost (a sequence gap): what it removed meanwhile may still be
     * claimed, what it stored cannot be placed. Its blocks are forgotten (the view may under-claim,
     * never over-claim) and the worker's view is stale until {@code rebuildNanos} from now, so that
     * cache_aware decides by the local tree while the index fills again.
     */
    void lost(int rank, long nowNanos, long rebuildNanos) {
        gaps.incrementAndGet();
        clear(rank);
        rebuildingUntil = nowNanos + Math.max(1, rebuildNanos);
    }

    /** Leading blocks of {@code promptKeys} (keys at {@link #blockSize}) this worker holds: its longest rank's. */
    public int matchedBlocks(long[] promptKeys) {
        int best = 0;
        for (ChainKeys held : keys) {
            int i = 0;
            while (i < promptKeys.length && held.contains(promptKeys[i])) {
                i++;
            }
            best = Math.max(best, i);
        }
        return best;
    }

    /**
     * Leading blocks of {@code blockSize} tokens of the prompt whose {@code PromptChain} is
     * {@code promptChain} this worker holds: one key mixed and looked up per block, until the first
     * miss.
     */
    public int matchedBlocks(long[] promptChain, int blockSize) {
        int best = 0;
        for (ChainKeys held : keys) {
            best = Math.max(best, held.matchedBlocks(promptChain, blockSize));
        }
        return best;
    }

    /** As {@link #matchedBlocks(long[], int)}, on DP rank {@code rank}'s cache alone. */
    public int rankMatchedBlocks(int rank, long[] promptChain, int blockSize) {
        return keys[rank].matchedBlocks(promptChain, blockSize);
    }

    /** The block size of the worker's events (0 before the first store). */
    public int blockSize() {
        return blockSize;
    }

    /** The worker was sent a prompt that should store new blocks: expect an event. */
    public void expectEvents(long nowNanos) {
        if (awaitingSince == 0) {
            awaitingSince = nowNanos;
        }
    }

    /** Nanos since when the worker has been awaited (sent work and silent since); 0: not awaited. */
    public long awaitingSince() {
        return awaitingSince;
    }

    public Freshness freshness(long nowNanos, long staleAfterNanos) {
        if (lastEventNanos == 0) {
            return Freshness.MISSING;
        }
        long until = rebuildingUntil;
        if (until != 0 && nowNanos - until < 0) {
            return Freshness.STALE;
        }
        long since = awaitingSince;
        return since != 0 && nowNanos - since > staleAfterNanos ? Freshness.STALE : Freshness.FRESH;
    }

    /** Times a silent stream of this worker was closed and opened again. */
    public long resubscribes() {
        return resubscribes.get();
    }

    /** Blocks in the index: each rank's distinct chain keys, summed over the ranks. */
    public int size() {
        int sum = 0;
        for (ChainKeys held : keys) {
            sum += held.size();
        }
        return sum;
    }

    public long events() {
        return events.get();
    }

    public long gaps() {
        return gaps.get();
    }

    public long orphans() {
        return orphans.get();
    }

    /** Frames or events of this worker that could not be read or applied, skipped. */
    public long malformed() {
        return malformed.get();
    }

    /** Blocks forgotten to stay within the limit (least recently stored first). */
    public long evicted() {
        return evicted.get();
    }

    /** Whether DP rank {@code rank}'s stream is connected (its ZMTP handshake done, not disconnected since). */
    public boolean up(int rank) {
        return rankUp.get(rank) == 1;
    }

    void up(int rank, boolean connected) {
        rankUp.set(rank, connected ? 1 : 0);
    }

    /** Nanos of rank {@code rank}'s last batch (0: none). */
    public long lastEventNanos(int rank) {
        return rankHeardNanos.get(rank);
    }

    /** Nanos of the last batch (0: none). */
    public long lastEventNanos() {
        return lastEventNanos;
    }
}
