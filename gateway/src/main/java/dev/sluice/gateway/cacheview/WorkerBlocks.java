package dev.sluice.gateway.cacheview;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What one worker's KV cache holds, as its events told: the chain keys ({@link BlockChain}) of its
 * cached blocks, bounded to {@code maxBlocks} (past it the oldest stored are forgotten: the view
 * under-claims, never over-claims), and how fresh that knowledge is.
 *
 * <p>Threads: {@link #apply} and the other writers run on the subscriber's thread only (the engine
 * hash map is confined to it); {@link #matchedBlocks}, {@link #freshness} and the counters are read
 * from any thread (the admission lock's, metrics, admin).
 */
public final class WorkerBlocks {
    /** How far this worker's view can be trusted. */
    public enum Freshness {
        /** Events have come, and none is overdue. */
        FRESH,
        /** No event yet: the worker may publish nothing at all. */
        MISSING,
        /** Sent work that should have stored blocks, and silent for longer than stale_after since. */
        STALE;

        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final int maxBlocks;
    /** Engine hash to chain key, oldest stored first; the subscriber's thread only. */
    private final LinkedHashMap<Long, Long> byEngineHash;
    /** Chain key to how many engine blocks carry it (DP ranks may store the same prefix). */
    private final Map<Long, Integer> keys = new ConcurrentHashMap<>();
    private volatile int blockSize;
    private volatile long lastEventNanos;
    private volatile long awaitingSince;
    final AtomicLong events = new AtomicLong();
    final AtomicLong batches = new AtomicLong();
    final AtomicLong gaps = new AtomicLong();
    final AtomicLong orphans = new AtomicLong();
    final AtomicLong malformed = new AtomicLong();

    public WorkerBlocks(long maxBlocks) {
        this.maxBlocks = (int) Math.min(Integer.MAX_VALUE, maxBlocks);
        this.byEngineHash = new LinkedHashMap<>(1024) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Long> eldest) {
                if (size() > WorkerBlocks.this.maxBlocks) {
                    release(eldest.getValue());
                    return true;
                }
                return false;
            }
        };
    }

    /** Applies one batch in order; {@code nowNanos} marks the worker as heard from. */
    public void apply(KvEventBatch batch, long nowNanos) {
        for (KvEvent e : batch.events()) {
            events.incrementAndGet();
            if (e instanceof KvEvent.Stored s) {
                stored(s);
            } else if (e instanceof KvEvent.Removed r) {
                for (long h : r.hashes()) {
                    Long key = byEngineHash.remove(h);
                    if (key != null) {
                        release(key);
                    }
                }
            } else {
                clear();
            }
        }
        batches.incrementAndGet();
        lastEventNanos = nowNanos;
        awaitingSince = 0;
    }

    private void stored(KvEvent.Stored s) {
        int size = s.blockSize();
        if (size < 1 || s.tokens().length < (long) s.hashes().length * size) {
            malformed.incrementAndGet();
            return;
        }
        long parent = BlockChain.ROOT;
        if (s.parent().isPresent()) {
            Long p = byEngineHash.get(s.parent().getAsLong());
            if (p == null) {
                // stored before we subscribed, or its events were lost: cannot be placed
                orphans.addAndGet(s.hashes().length);
                return;
            }
            parent = p;
        }
        blockSize = size;
        for (int i = 0; i < s.hashes().length; i++) {
            long key = BlockChain.next(parent, s.tokens(), i * size, (i + 1) * size);
            Long old = byEngineHash.put(s.hashes()[i], key);
            if (old != null) {
                release(old);
            }
            keys.merge(key, 1, Integer::sum);
            parent = key;
        }
    }

    /** Forgets everything (AllBlocksCleared, or the publisher restarted). */
    public void clear() {
        byEngineHash.clear();
        keys.clear();
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

    public Freshness freshness(long nowNanos, long staleAfterNanos) {
        if (lastEventNanos == 0) {
            return Freshness.MISSING;
        }
        long since = awaitingSince;
        return since != 0 && nowNanos - since > staleAfterNanos ? Freshness.STALE : Freshness.FRESH;
    }

    /** A sequence gap: batches were lost. */
    void gap() {
        gaps.incrementAndGet();
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
