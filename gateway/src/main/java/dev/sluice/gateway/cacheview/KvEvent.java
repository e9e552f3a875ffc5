package dev.sluice.gateway.cacheview;

import java.util.Objects;

/**
 * One KV cache event of a worker, as SGLang and vLLM publish them (docs/cache-affinity.md):
 * blocks stored, blocks removed, everything cleared.
 */
public sealed interface KvEvent {
    /**
     * Blocks stored: {@code hashes[i]} (the engine's ids) holds {@code tokens[i*blockSize, (i+1)*blockSize)};
     * {@code parent} is the engine hash of the block before the first (empty: the prompt's start).
     */
    record Stored(long[] hashes, java.util.OptionalLong parent, int[] tokens, int blockSize) implements KvEvent {
        public Stored {
            Objects.requireNonNull(hashes, "hashes");
            Objects.requireNonNull(parent, "parent");
            Objects.requireNonNull(tokens, "tokens");
        }
    }

    /** Blocks evicted. */
    record Removed(long[] hashes) implements KvEvent {
        public Removed {
            Objects.requireNonNull(hashes, "hashes");
        }
    }

    /** The whole cache emptied. */
    record Cleared() implements KvEvent {
    }
}
