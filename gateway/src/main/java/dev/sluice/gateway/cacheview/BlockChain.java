package dev.sluice.gateway.cacheview;

/**
 * The gateway's own names for cached blocks: a 64-bit chain over the blocks' token ids, so that
 * the key of block i names the whole prefix up to it. Engines' block hashes are their own (SGLang:
 * a SHA-256 chain; vLLM: seeded per process), so the gateway recomputes a key from each event's
 * token ids and uses the engine hash only to find a block's parent and to remove it, as NVIDIA
 * Dynamo's KV router does (docs/cache-affinity.md).
 */
public final class BlockChain {
    /** The key "before" a prompt's first block. */
    public static final long ROOT = 0x5_1ce_0000_0000_0001L;
    private static final long FNV_PRIME = 0x100000001b3L;

    private BlockChain() {
    }

    /** The key of the block holding {@code tokens[from, to)} after the block keyed {@code parent}. */
    public static long next(long parent, int[] tokens, int from, int to) {
        long h = mix(parent) ^ 0xcbf29ce484222325L;
        for (int i = from; i < to; i++) {
            h = (h ^ tokens[i]) * FNV_PRIME;
        }
        return mix(h ^ (to - from));
    }

    /** The keys of a prompt's full blocks of {@code blockSize} tokens (a partial last block is never cached). */
    public static long[] keys(int[] tokens, int blockSize) {
        if (blockSize < 1) {
            return new long[0];
        }
        int n = tokens.length / blockSize;
        long[] out = new long[n];
        long key = ROOT;
        for (int b = 0; b < n; b++) {
            key = next(key, tokens, b * blockSize, (b + 1) * blockSize);
            out[b] = key;
        }
        return out;
    }

    /** SplitMix64's finalizer: FNV's low bits alone are weak, and the index hashes the key. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
