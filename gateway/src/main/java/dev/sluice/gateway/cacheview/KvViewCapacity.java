package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.config.ByteSizes;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.KvEventsConfig;
import java.util.List;
import java.util.Optional;

/**
 * Whether the KV view a configuration asks for fits the heap: the most it can take is
 * {@code routing.kv_events.max_memory}, or, without it, every subscribed worker-rank at
 * {@code max_blocks_per_worker} ({@link WorkerBlocks#bytesFor}). More than {@link #HEAP_SHARE}
 * of the heap leaves too little for requests, buffers and the prefix trees: {@code serve}
 * refuses it at start, {@code check-config} (another JVM, maybe another heap) warns.
 */
public final class KvViewCapacity {
    /** The share of the heap (-Xmx) the KV view may take at most. */
    public static final double HEAP_SHARE = 0.5;

    private KvViewCapacity() {
    }

    /** The most bytes the view of {@code config} can take in a heap of {@code maxHeap}; 0 without kv_events. */
    public static long need(GatewayConfig config, long maxHeap) {
        Optional<KvEventsConfig> kv = config.routing().kvEvents();
        if (kv.isEmpty()) {
            return 0;
        }
        KvEventsConfig k = kv.get();
        if (k.maxMemory().isPresent()) {
            return k.maxMemoryBytes(maxHeap);
        }
        return subscribed(config, k) * WorkerBlocks.bytesFor(k.dpRanks(), k.maxBlocksPerWorker());
    }

    /** The configured prefill (or unified) workers that have an event endpoint. */
    static long subscribed(GatewayConfig config, KvEventsConfig k) {
        List<WorkerEndpoint> ws = config.workers().prefill().isEmpty() ? config.workers().unified()
                : config.workers().prefill();
        return ws.stream().filter(w -> k.endpointOf(w.url(), w.host()).isPresent()).count();
    }

    /** Why the view cannot fit a heap of {@code maxHeap}; empty when it fits. */
    public static Optional<String> problem(GatewayConfig config, long maxHeap) {
        long need = need(config, maxHeap);
        long allowed = (long) (maxHeap * HEAP_SHARE);
        if (need <= allowed) {
            return Optional.empty();
        }
        KvEventsConfig k = config.routing().kvEvents().orElseThrow();
        String what = k.maxMemory().isPresent()
                ? "routing.kv_events.max_memory: " + k.maxMemory().get().format() + " (" + mib(need) + ")"
                : "routing.kv_events.max_blocks_per_worker: " + k.maxBlocksPerWorker() + " x "
                        + subscribed(config, k) + " workers x dp_ranks " + k.dpRanks() + " needs up to " + mib(need)
                        + " for the KV view (" + WorkerBlocks.bytesFor(1, k.maxBlocksPerWorker())
                        / k.maxBlocksPerWorker() + " bytes a block), and routing.kv_events.max_memory is not set";
        return Optional.of(what + " (expected: at most " + (int) (HEAP_SHARE * 100) + "% of the heap, "
                + mib(allowed) + " of -Xmx " + mib(maxHeap) + "): set routing.kv_events.max_memory (e.g. 25%), "
                + "lower routing.kv_events.max_blocks_per_worker, or give the JVM a larger -Xmx");
    }

    private static String mib(long bytes) {
        return bytes % (1L << 20) == 0 ? ByteSizes.format(bytes) : (bytes >> 20) + "MiB";
    }
}
