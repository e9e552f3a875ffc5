package dev.sluice.testbed.sim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One server's simulated prefix cache (SGLang's radix cache, vLLM's automatic prefix caching): an
 * LRU set of prompt blocks of {@value #BLOCK_TOKENS} tokens, bounded in tokens. A block is known by
 * the hash of the whole prompt up to its end ({@link PromptBlocks}), so a match is always a prefix
 * match: the first block not in the cache ends it. Blocks enter when a prefill completes (an
 * aborted prefill leaves nothing), and a hit refreshes the blocks it used. Confined to the server's
 * event loop; the counters are readable from any thread.
 *
 * <p>With a {@link KvEventPublisher} attached, each change is published as SGLang publishes its
 * radix cache's: a new block is a {@code BlockStored} (an already cached one, refreshed, is
 * nothing), an evicted one a {@code BlockRemoved}, {@link #clear} an {@code AllBlocksCleared}; the
 * events of one insert go out as one batch, as one scheduler step's do.
 */
final class PrefixCache {
    static final int BLOCK_TOKENS = 16;

    private final long capacityBlocks;
    private final LinkedHashMap<Long, Boolean> blocks;
    private final List<KvEvent> pending = new ArrayList<>();
    private volatile KvEventPublisher events;
    private volatile long hitTokens;
    private volatile long queryTokens;

    PrefixCache(long capacityTokens) {
        this.capacityBlocks = capacityTokens / BLOCK_TOKENS;
        this.blocks = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                boolean evict = size() > capacityBlocks;
                if (evict && events != null) {
                    pending.add(new KvEvent.Removed(eldest.getKey()));
                }
                return evict;
            }
        };
    }

    /** Publishes this cache's changes from now on (null: stop). */
    void publishTo(KvEventPublisher publisher) {
        this.events = publisher;
    }

    boolean enabled() {
        return capacityBlocks > 0;
    }

    /**
     * Prompt tokens already cached for a prompt of {@code promptTokens} tokens with these blocks,
     * counted as a lookup. At least one token is always left to compute: the last prompt token's
     * logits are needed for the first output token, so SGLang and vLLM never serve a whole prompt
     * from the cache either.
     */
    int lookup(long[] prefix, int promptTokens) {
        int matched = 0;
        if (enabled()) {
            while (matched < prefix.length && blocks.get(prefix[matched]) != null) {
                matched++;
            }
        }
        int cached = (int) Math.max(0, Math.min((long) matched * BLOCK_TOKENS, promptTokens - 1L));
        queryTokens += promptTokens;
        hitTokens += cached;
        return cached;
    }

    /** A prefill of this prompt completed: its blocks are cached (and most recently used). */
    void insert(long[] prefix) {
        insert(prefix, PromptBlocks.NO_TOKENS);
    }

    /**
     * As {@link #insert(long[])}; {@code tokens} are the blocks' token ids ({@value #BLOCK_TOKENS}
     * per block, {@link PromptBlocks#tokens}), what a {@code BlockStored} event carries.
     */
    void insert(long[] prefix, int[] tokens) {
        if (!enabled()) {
            return;
        }
        KvEventPublisher publisher = events;
        for (int b = 0; b < prefix.length; b++) {
            // containsKey does not touch the access order; the store is told before the eviction it causes
            if (publisher != null && !blocks.containsKey(prefix[b]) && tokens.length >= (b + 1) * BLOCK_TOKENS) {
                pending.add(new KvEvent.Stored(prefix[b], b == 0 ? null : prefix[b - 1],
                        Arrays.copyOfRange(tokens, b * BLOCK_TOKENS, (b + 1) * BLOCK_TOKENS)));
            }
            blocks.put(prefix[b], Boolean.TRUE);
        }
        flush(publisher);
    }

    /** {@code /flush_cache}, {@code /reset_prefix_cache}, or a process that died. */
    void clear() {
        blocks.clear();
        KvEventPublisher publisher = events;
        if (publisher != null) {
            pending.add(new KvEvent.Cleared());
        }
        flush(publisher);
    }

    private void flush(KvEventPublisher publisher) {
        if (publisher != null && !pending.isEmpty()) {
            publisher.publish(pending);
        }
        pending.clear();
    }

    long hitTokens() {
        return hitTokens;
    }

    long queryTokens() {
        return queryTokens;
    }

    /** Hit tokens over query tokens over the server's life; 0 before the first lookup. */
    double hitRate() {
        long q = queryTokens;
        return q == 0 ? 0 : (double) hitTokens / q;
    }
}
