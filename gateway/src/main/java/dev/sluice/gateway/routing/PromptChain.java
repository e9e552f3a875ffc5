package dev.sluice.gateway.routing;

/**
 * A prompt's token ids as a chain of rolling hashes, one after each token, so that the key of any
 * prefix, whatever the workers' block size, is one step away: {@code key(chain[end - 1])}. Built on
 * the request's event loop ({@link RoutingRequest}); under the admission lock the KV event view only
 * looks keys up. The view keys the blocks its events report with the same function
 * ({@code cacheview.BlockChain}), so that a prompt and a cached block with the same tokens from the
 * start get the same key (docs/cache-affinity.md).
 */
public final class PromptChain {
    /** The state before a prompt's first token. */
    public static final long ROOT = 0x5_1ce_0000_0000_0001L;
    private static final long FNV_PRIME = 0x100000001b3L;
    private static final long[] NONE = new long[0];

    private PromptChain() {
    }

    /** The state after {@code token}, from the state {@code h} before it (FNV-1a over the ids). */
    public static long extend(long h, int token) {
        return (h ^ token) * FNV_PRIME;
    }

    /** The state after each token of {@code ids}. */
    public static long[] of(int[] ids) {
        if (ids.length == 0) {
            return NONE;
        }
        long[] out = new long[ids.length];
        long h = ROOT;
        for (int i = 0; i < ids.length; i++) {
            h = extend(h, ids[i]);
            out[i] = h;
        }
        return out;
    }

    /** The key of the prefix whose last state is {@code h}: SplitMix64's finalizer (FNV's low bits alone are weak). */
    public static long key(long h) {
        long z = h;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
