package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code routing.kv_events} (a part of {@link RoutingConfig}): subscribe to each prefill worker's KV cache events (SGLang's and
 * vLLM's {@code --kv-events-config}) so that cache_aware routes by what the workers hold, the
 * same on every gateway replica (docs/cache-affinity.md).
 *
 * @param endpoints          worker URL (as in {@code workers:}) to its event endpoint, {@code tcp://host:port}
 * @param endpointPattern    for workers not in {@code endpoints}: {@code {host}} replaced by the worker's host
 * @param topic              the publisher's topic ("" in SGLang and vLLM by default)
 * @param tokenizer          how the gateway computes a prompt's token ids to match the events with
 * @param staleAfter         a worker sent work that should store new blocks, silent this long: its view is stale
 * @param maxBlocksPerWorker blocks remembered per worker DP rank (the least recently stored go first)
 * @param maxMemory          the whole KV view's memory (empty: bounded by maxBlocksPerWorker alone);
 *                           with maxBlocksPerWorker, the lower bound wins
 * @param maxMessageSize     the largest event frame read; larger ones are dropped
 */
public record KvEventsConfig(Map<String, String> endpoints, Optional<String> endpointPattern, String topic,
                             RoutingConfig.Tokenizer tokenizer, Duration staleAfter, Duration resubscribeAfter,
                             int dpRanks, long maxBlocksPerWorker, Optional<MemoryBudget> maxMemory,
                             long maxMessageSize) {
    public static final Duration DEFAULT_STALE_AFTER = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RESUBSCRIBE_AFTER = Duration.ofSeconds(5);
    /** 1 Mi blocks: 16M tokens at a 16-token page, 1M at SGLang's default page of 1. */
    public static final long DEFAULT_MAX_BLOCKS = 1L << 20;
    /** SGLang's and vLLM's batches take a few KiB to a few hundred KiB. */
    public static final long DEFAULT_MAX_MESSAGE_SIZE = 4L << 20;
    public static final long MIN_MAX_MESSAGE_SIZE = 64L << 10;
    public static final long MIN_MAX_MEMORY = 1L << 20;

    public KvEventsConfig {
        endpoints = Map.copyOf(endpoints);
        Objects.requireNonNull(endpointPattern, "endpointPattern");
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(tokenizer, "tokenizer");
        KeyCheck.atLeast("routing.kv_events.stale_after", staleAfter, Duration.ofSeconds(1));
        KeyCheck.atLeast("routing.kv_events.resubscribe_after", resubscribeAfter, Duration.ofSeconds(1));
        KeyCheck.atLeast("routing.kv_events.dp_ranks", dpRanks, 1);
        KeyCheck.atLeast("routing.kv_events.max_blocks_per_worker", maxBlocksPerWorker, 1L);
        Objects.requireNonNull(maxMemory, "maxMemory");
        KeyCheck.atLeast("routing.kv_events.max_message_size", maxMessageSize, MIN_MAX_MESSAGE_SIZE);
    }

    /** The view's memory budget in a JVM of {@code maxHeap} bytes of heap (Long.MAX_VALUE: none set). */
    public long maxMemoryBytes(long maxHeap) {
        return maxMemory.map(m -> m.resolve(maxHeap)).orElse(Long.MAX_VALUE);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The endpoint of the worker at {@code url} with host {@code host}, if any (its DP rank 0's). */
    public Optional<String> endpointOf(String url, String host) {
        String e = endpoints.get(url);
        if (e != null) {
            return Optional.of(e);
        }
        return endpointPattern.map(p -> p.replace("{host}", host));
    }

    /**
     * Each DP rank's endpoint: rank r publishes on the base port + r, as SGLang's and vLLM's
     * {@code ZmqEventPublisher.offset_endpoint_port} place them (docs/cache-affinity.md).
     */
    public java.util.List<String> rankEndpoints(String rank0) {
        return rankEndpoints(rank0, dpRanks);
    }

    /** As {@link #rankEndpoints(String)}, for a worker of {@code ranks} DP ranks (its own {@code dp_size}). */
    public java.util.List<String> rankEndpoints(String rank0, int ranks) {
        int colon = rank0.lastIndexOf(':');
        int port = Integer.parseInt(rank0.substring(colon + 1));
        java.util.List<String> out = new java.util.ArrayList<>(ranks);
        for (int r = 0; r < ranks; r++) {
            out.add(rank0.substring(0, colon + 1) + (port + r));
        }
        return out;
    }

    /** Builds {@link KvEventsConfig}, each value checked by the record. */
    public static final class Builder {
        private Map<String, String> endpoints = Map.of();
        private Optional<String> endpointPattern = Optional.empty();
        private String topic = "";
        private RoutingConfig.Tokenizer tokenizer = RoutingConfig.Tokenizer.SIM;
        private Duration staleAfter = DEFAULT_STALE_AFTER;
        private Duration resubscribeAfter = DEFAULT_RESUBSCRIBE_AFTER;
        private int dpRanks = 1;
        private long maxBlocksPerWorker = DEFAULT_MAX_BLOCKS;
        private Optional<MemoryBudget> maxMemory = Optional.empty();
        private long maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE;

        public Builder endpoints(Map<String, String> v) {
            endpoints = v;
            return this;
        }

        public Builder endpointPattern(Optional<String> v) {
            endpointPattern = v;
            return this;
        }

        public Builder topic(String v) {
            topic = v;
            return this;
        }

        public Builder tokenizer(RoutingConfig.Tokenizer v) {
            tokenizer = v;
            return this;
        }

        public Builder staleAfter(Duration v) {
            staleAfter = v;
            return this;
        }

        public Builder resubscribeAfter(Duration v) {
            resubscribeAfter = v;
            return this;
        }

        public Builder dpRanks(int v) {
            dpRanks = v;
            return this;
        }

        public Builder maxBlocksPerWorker(long v) {
            maxBlocksPerWorker = v;
            return this;
        }

        public Builder maxMemory(Optional<MemoryBudget> v) {
            maxMemory = v;
            return this;
        }

        public Builder maxMessageSize(long v) {
            maxMessageSize = v;
            return this;
        }

        public KvEventsConfig build() {
            return new KvEventsConfig(endpoints, endpointPattern, topic, tokenizer, staleAfter, resubscribeAfter,
                    dpRanks, maxBlocksPerWorker, maxMemory, maxMessageSize);
        }
    }
}
