package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.routing.PromptChain;

/**
 * The gateway's own names for cached blocks: the {@link PromptChain} state after a block's last
 * token, continued from its parent's, so that a block's key names the whole prefix up to it and
 * equals the key a prompt with the same leading tokens computes on its event loop. Engines' block
 * hashes are their own (SGLang: a SHA-256 chain; vLLM: seeded per process), so the gateway
 * recomputes the chain from each event's token ids and uses the engine hash only to find a
 * block's parent and to remove it, as NVIDIA Dynamo's KV router does (docs/cache-affinity.md).
 */
public final class BlockChain {
    /** The state "before" a prompt's first block. */
    public static final long ROOT = PromptChain.ROOT;

    private BlockChain() {
    }

    /** The chain state after {@code tokens[from, to)}, continued from the state {@code parent}. */
    public static long next(long parent, int[] tokens, int from, int to) {
        long h = parent;
        for (int i = from; i < to; i++) {
            h = PromptChain.extend(h, tokens[i]);
        }
        return h;
    }

    /** The index key of the block whose chain state is {@code state}. */
    public static long key(long state) {
        return PromptChain.key(state);
    }

    /** The keys of a prompt's full blocks of {@code blockSize} tokens (a partial last block is never cached). */
    public static long[] keys(int[] tokens, int blockSize) {
        if (blockSize < 1) {
            return new long[0];
        }
        long[] chain = PromptChain.of(tokens);
        long[] out = new long[tokens.length / blockSize];
        for (int b = 0; b < out.length; b++) {
            out[b] = key(chain[(b + 1) * blockSize - 1]);
        }
        return out;
    }
}
