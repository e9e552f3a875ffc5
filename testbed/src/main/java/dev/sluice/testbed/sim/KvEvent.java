package dev.sluice.testbed.sim;

/**
 * One prefix-cache event as SGLang's radix cache records it ({@code BlockStored},
 * {@code BlockRemoved}, {@code AllBlocksCleared}); {@link KvEventPublisher} encodes them in
 * SGLang's wire format. Sources: docs/simulator-sources.md, docs/cache-affinity.md.
 */
sealed interface KvEvent {
    /** One page stored: its hash, the previous page's hash (null at the prompt's start), its tokens. */
    record Stored(long hash, Long parent, int[] tokens) implements KvEvent {
    }

    /** One page evicted. */
    record Removed(long hash) implements KvEvent {
    }

    /** The whole cache emptied ({@code /flush_cache}, a restart). */
    record Cleared() implements KvEvent {
    }
}
