package dev.sluice.gateway.cacheview;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What one worker's KV cache holds, as its events told: the chain keys ({@link BlockChain}) of its
 * cached blocks, bounded to {@code maxBlocks} (past it the oldest stored are forgotten: the view
 * under-claims, never over-claims), and how fresh that knowledge is.
 *
 * <p>A worker with attention data parallelism publishes one stream per DP rank, each rank its own
 * radix cache: each rank has its own engine-hash map (an {@code AllBlocksCleared}, a restart or a
 * gap on one rank forgets that rank's blocks only), and the chain keys are counted over all ranks,
 * so that the worker holds a prefix when any of its ranks does.
 *
 * <p>Threads: {@link #apply} and the other writers run on the subscriber's thread only (the engine
 * hash maps are confined to it); {@link #matchedBlocks}, {@link #freshness} and the counters are read
 * from any thread (the admission lock's, metrics, admin).
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

    private final int maxBlocks;
    /** Per DP rank: engine hash to chain state ({@link BlockChain}), oldest stored first; the subscriber's thread only. */
    private final List<LinkedHashMap<Long, Long>> byEngineHash;
    /** Chain key to how many engine blocks carry it (DP ranks may store the same prefix). */
    private final Map<Long, Integer> keys = new ConcurrentHashMap<>();
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

    public WorkerBlocks(long maxBlocks) {
        this(maxBlocks, 1);
    }

    /** @param ranks the worker's DP ranks (one event stream each), {@code maxBlocks} bounding each */
    public WorkerBlocks(long maxBlocks, int ranks) {
        this.maxBlocks = (int) Math.min(Integer.MAX_VALUE, maxBlocks);
        List<LinkedHashMap<Long, Long>> maps = new ArrayList<>(ranks);
        for (int r = 0; r < ranks; r++) {
            maps.add(new LinkedHashMap<>(1024) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Long, Long> eldest) {
                    if (size() > WorkerBlocks.this.maxBlocks) {
                        release(BlockChain.key(eldest.getValue()));
                        return true;
                    }
                    return false;
                }
            });
        }
        this.byEngineHash = List.copyOf(maps);
    }

    /** The DP ranks (event streams) this worker's view is fed by. */
    public int ranks() {
        return byEngineHash.size();
    }

    /** Applies one batch of rank 0 in order; {@code nowNanos} marks the worker as heard from. */
    public void apply(KvEventBatch batch, long nowNanos) {
        apply(0, batch, nowNanos);
    }

    /** Applies one batch of DP rank {@code rank} in order; {@code nowNanos} marks the worker as heard from. */
    public void apply(int rank, KvEventBatch batch, long nowNanos) {
        LinkedHashMap<Long, Long> engine = byEngineHash.get(rank);
        for (KvEvent e : batch.events()) {
            events.incrementAndGet();
            if (e instanceof KvEvent.Stored s) {
                stored(engine, s);
            } else if (e instanceof KvEvent.Removed r) {
                for (long h : r.hashes()) {
                    Long state = engine.remove(h);
                    if (state != null) {
                        release(BlockChain.key(state));
                    }
                }
            } else {
                clear(rank);
            }
        }
        batches.incrementAndGet();
        lastEventNanos = nowNanos;
        awaitingSince = 0;
    }

    private void stored(LinkedHashMap<Long, Long> engine, KvEvent.Stored s) {
        int size = s.blockSize();
        if (size < 1 || s.tokens().length < (long) s.hashes().length * size) {
            malformed.incrementAndGet();
            return;
        }
        long parent = BlockChain.ROOT;
        if (s.parent().isPresent()) {
            Long p = engine.get(s.parent().getAsLong());
            if (p == null) {
                // stored before we subscribed, or its events were lost: cannot be placed
                orphans.addAndGet(s.hashes().length);
                return;
            }
            parent = p;
        }
        blockSize = size;
        for (int i = 0; i < s.hashes().length; i++) {
            long state = BlockChain.next(parent, s.tokens(), i * size, (i + 1) * size);
            Long old = engine.put(s.hashes()[i], state);
            if (old != null) {
                release(BlockChain.key(old));
            }
            keys.merge(BlockChain.key(state), 1, Integer::sum);
            parent = state;
        }
    }

    /** Forgets every rank's blocks. */
    public void clear() {
        for (int r = 0; r < byEngineHash.size(); r++) {
            clear(r);
        }
    }

    /** Forgets one rank's blocks (its AllBlocksCleared, or its publisher restarted). */
    public void clear(int rank) {
        LinkedHashMap<Long, Long> engine = byEngineHash.get(rank);
        for (Long state : engine.values()) {
            release(BlockChain.key(state));
        }
        engine.clear();
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

    private void release(long key) {
        keys.computeIfPresent(key, (k, n) -> n > 1 ? n - 1 : null);
    }

    /** Leading blocks of {@code promptKeys} (keys at {@link #blockSize}) this worker holds. */
    public int matchedBlocks(long[] promptKeys) {
        int i = 0;
        while (i < promptKeys.length && keys.containsKey(promptKeys[i])) {
            i++;
        }
        return i;
    }

    /**
     * Leading blocks of {@code blockSize} tokens of the prompt whose {@code PromptChain} is
     * {@code promptChain} this worker holds: one key mixed and looked up per block, until the first
     * miss.
     */
    public int matchedBlocks(long[] promptChain, int blockSize) {
        int i = 0;
        for (int end = blockSize - 1; end < promptChain.length; end += blockSize) {
            if (!keys.containsKey(BlockChain.key(promptChain[end]))) {
                break;
            }
            i++;
        }
        return i;
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

    /** Blocks in the index (distinct chain keys). */
    public int size() {
        return keys.size();
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

    /** Nanos of the last batch (0: none). */
    public long lastEventNanos() {
        return lastEventNanos;
    }
}
