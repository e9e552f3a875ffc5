package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.Worker;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Prefix affinity per data-parallel rank: which rank of a worker was last sent each prompt prefix.
 * Each rank of an SGLang worker with DP attention has its own radix cache, so a prompt that shares a
 * prefix with an earlier one is a cache hit only on the rank that computed it. A prompt is cut into
 * blocks of {@value #BLOCK_CHARS} characters, each known by a hash of the whole prompt up to its end
 * (so a match is a prefix match); per worker the last rank of each block is remembered, the least
 * recently used forgotten past {@value #MAX_BLOCKS}. The blocks are hashed on the request's event loop
 * ({@link #blocks}); under the admission lock only looked up. Guarded by the admission lock.
 */
final class RankAffinity {
    static final int BLOCK_CHARS = 256;
    /** Blocks remembered per worker: 16 Mi prompt characters, about 4M tokens. */
    static final int MAX_BLOCKS = 1 << 16;
    /** Blocks hashed per prompt: the first 64 Ki characters, so a huge prompt costs its event loop ~0.1 ms at most. */
    static final int MAX_PROMPT_BLOCKS = 256;
    static final long[] NONE = new long[0];

    private final Map<Worker, LinkedHashMap<Long, Integer>> byWorker = new HashMap<>();

    /** The chained hashes of {@code key}'s whole blocks (a shorter prompt has none: no affinity). */
    static long[] blocks(String key) {
        int n = Math.min(MAX_PROMPT_BLOCKS, key.length() / BLOCK_CHARS);
        if (n == 0) {
            return NONE;
        }
        long[] out = new long[n];
        long h = 0xcbf29ce484222325L;
        for (int b = 0; b < n; b++) {
            for (int i = b * BLOCK_CHARS, end = i + BLOCK_CHARS; i < end; i++) {
                h = (h ^ key.charAt(i)) * 0x100000001b3L;
            }
            out[b] = h;
        }
        return out;
    }

    /** The rank of {@code w} last sent the longest known prefix of these blocks, or -1. */
    int rankOf(Worker w, long[] blocks, int ranks) {
        LinkedHashMap<Long, Integer> m = blocks.length == 0 ? null : byWorker.get(w);
        if (m == null) {
            return -1;
        }
        int rank = -1;
        for (long b : blocks) {
            Integer r = m.get(b);
            if (r == null) {
                break;
            }
            rank = r;
        }
        return rank < ranks ? rank : -1;
    }

    /** {@code rank} of {@code w} was sent these blocks: it holds them now. */
    void dispatched(Worker w, long[] blocks, int rank) {
        if (blocks.length == 0) {
            return;
        }
        LinkedHashMap<Long, Integer> m = byWorker.computeIfAbsent(w, k -> new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Integer> eldest) {
                return size() > MAX_BLOCKS;
            }
        });
        for (long b : blocks) {
            m.put(b, rank);
        }
    }

    void remove(Worker w) {
        byWorker.remove(w);
    }
}
