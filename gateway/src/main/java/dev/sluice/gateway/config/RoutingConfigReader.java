package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.config.RoutingConfig.CacheAware;
import dev.sluice.gateway.config.RoutingConfig.Tokenizer;
import dev.sluice.gateway.config.RoutingConfig.Policy;
import dev.sluice.gateway.config.RoutingConfig.RolePolicy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reads the {@code routing:} section; every key is optional and validated, defaults as in
 * {@link RoutingConfig}:
 *
 * <pre>
 * routing:
 *   prefill:
 *     policy: cache_aware            # round_robin | least_load | power_of_two | cache_aware
 *     cache_aware:
 *       match_threshold: 0.5         # [0, 1]
 *       balance_abs_threshold: 16384 # prompt tokens (decode: streams, default 32)
 *       balance_rel_threshold: 1.5   # >= 1
 *       max_tree_size: 4194304       # characters per worker
 *       balance_share_threshold: 1.3 # 0 = off, else >= 1
 *       balance_share_half_life: 60s
 *       balance_share_max_recompute: 4096  # prompt tokens
 *   decode:
 *     policy: least_load
 *   direct_decode_max_tokens: 0      # 0 = always disaggregate
 *   dp_aware: auto                   # auto | always | never: route to a worker's data-parallel ranks
 *   kv_events:                       # absent: no subscription
 *     endpoints: {"http://p0:30000": "tcp://p0:5557"}
 *     endpoint_pattern: "tcp://{host}:5557"
 *     topic: ""
 *     tokenizer: sim
 *     stale_after: 30s
 *     resubscribe_after: 5s
 *     dp_ranks: 1
 *     max_blocks_per_worker: 1048576   # per DP rank of each worker
 *     max_memory: 25%                  # or 512MiB; absent: max_blocks_per_worker alone bounds it
 *     max_message_size: 4MiB
 * </pre>
 */
public final class RoutingConfigReader {
    private RoutingConfigReader() {
    }

    /** Reads a {@code routing:} node parsed elsewhere (tests, tools); messages start with "routing.". */
    public static RoutingConfig read(JsonNode routing) {
        ConfigReading reading = ConfigReading.of("routing", Map.of(), Map.of(), name -> null);
        RoutingConfig r = read(ConfigNode.root(routing, "routing", reading));
        if (reading.hasProblems()) {
            throw new ConfigException(reading.problems());
        }
        return r;
    }

    static RoutingConfig read(ConfigNode n) {
        n.allowOnly("prefill", "decode", "direct_decode_max_tokens", "kv_events", "dp_aware");
        RoutingConfig defaults = RoutingConfig.defaults();
        return RoutingConfig.builder()
                .prefill(role(n.child("prefill", "The prefill workers' policy (and the unified workers', in "
                        + "disaggregation: none)."), defaults.prefill(), "prefill: pending prompt tokens"))
                .decode(role(n.child("decode", "The decode workers' policy."), defaults.decode(), "decode: streams"))
                .directDecodeMaxTokens(n.child("direct_decode_max_tokens", "vllm mode only: a prompt of at most this "
                        + "many tokens skips the prefill hop and goes to a decode alone (a vLLM decode prefills a "
                        + "request without kv_transfer_params itself); 0 = off.").longIn(0, 0, Long.MAX_VALUE / 4))
                .kvEvents(kvEvents(n.child("kv_events", "Subscribe to each prefill worker's KV cache events (SGLang's "
                        + "and vLLM's --kv-events-config, ZMQ + msgpack) so that cache_aware routes by what the workers "
                        + "hold, the same on every gateway replica; the local prefix tree stays the fallback when a "
                        + "worker's view is missing or stale (docs/cache-affinity.md). Absent: off.")))
                .dpAware(n.child("dp_aware", "Send each request to a data-parallel rank of a worker, not to the worker: "
                        + "auto (for an SGLang worker whose /server_info reports dp_size > 1: the rank goes in "
                        + "routed_dp_rank, and on a PD pair the bootstrap room is chosen so that room % dp_size is the "
                        + "prefill's rank; for a vLLM worker whose /metrics shows more than one engine: the rank goes in "
                        + "the X-data-parallel-rank header), always (as auto, and an SGLang worker that reports no "
                        + "dp_size is taken at kv_events.dp_ranks), or never (the worker's own balancer picks the rank; "
                        + "docs/routing.md). Takes a restart.")
                        .oneOf(RoutingConfig.DpAware.AUTO, List.of(RoutingConfig.DpAware.values()),
                                RoutingConfig.DpAware::label))
                .build();
    }

    private static Optional<KvEventsConfig> kvEvents(ConfigNode n) {
        n.allowOnly("endpoints", "endpoint_pattern", "topic", "tokenizer", "stale_after", "resubscribe_after", "dp_ranks",
                "max_blocks_per_worker", "max_memory", "max_message_size");
        Map<String, String> endpoints = new LinkedHashMap<>();
        for (Map.Entry<String, ConfigNode> e : n.child("endpoints", "Per prefill worker: its URL, as written in "
                + "workers:, to the endpoint its events are published on.").entries("The worker's event endpoint, "
                + "tcp://host:port.")) {
            String v = e.getValue().text(null);
            if (v != null && tcp(e.getValue(), v)) {
                endpoints.put(e.getKey(), v);
            }
        }
        ConfigNode patternNode = n.child("endpoint_pattern", "The event endpoint of a worker not listed in endpoints: "
                + "{host} is replaced by the worker's host, e.g. tcp://{host}:5557 (SGLang's default port).");
        Optional<String> pattern = patternNode.optionalText().filter(p -> tcp(patternNode, p));
        String topic = n.child("topic", "The publishers' topic (SGLang and vLLM: \"\" by default).").text("");
        Tokenizer tokenizer = n.child("tokenizer", "How the gateway computes a prompt's token ids to match the events: "
                + "sim (the testbed simulator's tokenizer) or hf (the model's own: admission.tokenizer.path's "
                + "tokenizer.json, and the chat template of the tokenizer_config.json beside it; needs that path). "
                + "Prompts given as token ids are used as they are.")
                .oneOf(Tokenizer.SIM, List.of(Tokenizer.values()), Tokenizer::label);
        Duration staleAfter = n.child("stale_after", "A worker sent a prompt that should store new blocks, and silent "
                + "this long since: its view is stale, and cache_aware falls back to the local prefix tree.")
                .durationAtLeast(KvEventsConfig.DEFAULT_STALE_AFTER, Duration.ofSeconds(1));
        Duration resubscribeAfter = n.child("resubscribe_after", "A worker sent a prompt that should store new "
                + "blocks, and a stream of its silent this long since: the subscription is closed and opened again "
                + "(a ZMQ subscription can come up dead; docs/cache-affinity.md). Keep it below stale_after.")
                .durationAtLeast(KvEventsConfig.DEFAULT_RESUBSCRIBE_AFTER, Duration.ofSeconds(1));
        int dpRanks = n.child("dp_ranks", "Event streams per worker that does not report its data-parallel size: "
                + "SGLang and vLLM publish one stream per DP rank, rank r on the endpoint's port + r. An SGLang "
                + "worker's own dp_size (/server_info) wins: it gets one stream per rank it reports.")
                .intIn(1, 1, 1024);
        long maxBlocks = n.child("max_blocks_per_worker", "Blocks remembered per DP rank of each worker (a worker "
                + "with dp_ranks: 4 holds up to four times this); past it the least recently stored are forgotten. "
                + "With max_memory, the lower bound wins.").longIn(KvEventsConfig.DEFAULT_MAX_BLOCKS, 1, Integer.MAX_VALUE - 8);
        Optional<MemoryBudget> maxMemory = n.child("max_memory", "The whole KV view's memory (every worker's every "
                + "rank): a byte size such as 512MiB, or a share of the heap (-Xmx) such as 25%. Shared evenly by "
                + "the worker-ranks, at about 45 bytes a block (docs/cache-affinity.md); past its share a rank "
                + "forgets its least recently stored blocks. Absent: max_blocks_per_worker alone bounds the view. "
                + "serve refuses to start when the view could need more than half the heap.")
                .optionalMemoryBudget(KvEventsConfig.MIN_MAX_MEMORY);
        long maxMessageSize = n.child("max_message_size", "The largest event message read from a publisher (ZMQ's "
                + "MAXMSGSIZE); a larger one is dropped with its connection, which ZMQ opens again.")
                .bytesAtLeast(KvEventsConfig.DEFAULT_MAX_MESSAGE_SIZE, KvEventsConfig.MIN_MAX_MESSAGE_SIZE);
        if (n.isMissing() || endpoints.isEmpty() && pattern.isEmpty()) {
            return Optional.empty(); // no endpoint named: off (the other keys alone mean nothing, as listen.tls)
        }
        return Optional.of(KvEventsConfig.builder().endpoints(endpoints).endpointPattern(pattern)
                .topic(topic).tokenizer(tokenizer).staleAfter(staleAfter).resubscribeAfter(resubscribeAfter)
                .dpRanks(dpRanks).maxBlocksPerWorker(maxBlocks).maxMemory(maxMemory).maxMessageSize(maxMessageSize)
                .build());
    }

    private static boolean tcp(ConfigNode n, String endpoint) {
        if (!endpoint.startsWith("tcp://") || endpoint.lastIndexOf(':') < "tcp://".length()) {
            n.reject(endpoint, "tcp://host:port");
            return false;
        }
        return true;
    }

    private static RolePolicy role(ConfigNode n, RolePolicy def, String loadUnit) {
        n.allowOnly("policy", "cache_aware");
        Policy policy = n.child("policy", "round_robin, least_load (in-flight load weighted by the worker's KV "
                + "usage), power_of_two, or cache_aware (prefix affinity).")
                .oneOf(def.policy(), List.of(Policy.values()), Policy::label);
        return new RolePolicy(policy, cacheAware(n.child("cache_aware", "Settings of cache_aware: prefix affinity "
                + "over the whole rendered prompt (every chat message in order; /generate text or input_ids), so "
                + "that SGLang HiCache and vLLM's prefix cache get hits."), def.cacheAware(), loadUnit));
    }

    private static CacheAware cacheAware(ConfigNode n, CacheAware def, String loadUnit) {
        n.allowOnly("match_threshold", "balance_abs_threshold", "balance_rel_threshold", "max_tree_size",
                "balance_share_threshold", "balance_share_half_life", "balance_share_max_recompute");
        return CacheAware.builder(n.path())
                .matchThreshold(n.child("match_threshold", "Share of the prompt that must match a worker's prefix "
                        + "tree to follow it.").doubleIn(def.matchThreshold(), 0.0, 1.0, "a number in [0.0, 1.0]"))
                .balanceAbsThreshold(n.child("balance_abs_threshold",
                        "Load wins over a prefix hit when the best-matching worker carries "
                        + "this much more load than the least loaded one (" + loadUnit + ")...")
                        .longIn(def.balanceAbsThreshold(), 0, Long.MAX_VALUE / 4))
                .balanceRelThreshold(n.child("balance_rel_threshold", "...and more than this times its load.")
                        .doubleAtLeast(def.balanceRelThreshold(), 1.0))
                .maxTreeSize(n.child("max_tree_size",
                        "Prompt characters remembered per worker before its least recently used "
                        + "prefixes are forgotten (4194304: about 1M tokens).")
                        .longIn(def.maxTreeSize(), 1, Integer.MAX_VALUE))
                .shareThreshold(shareThreshold(n.child("balance_share_threshold",
                        "The share guard: a best match sent more than this "
                        + "times the candidates' mean prompt tokens lately gives the request to a worker below the "
                        + "mean; 0 = off, else >= 1."), def.shareThreshold()))
                .shareHalfLife(n.child("balance_share_half_life",
                        "\"Lately\" for the share guard: prompt tokens routed to each "
                        + "worker, decayed with this half-life.")
                        .durationAtLeast(def.shareHalfLife(), Duration.ofMillis(1)))
                .shareMaxRecompute(n.child("balance_share_max_recompute",
                        "...but only when the other worker would recompute at most "
                        + "this many more prompt tokens (a long conversation stays where its history is).")
                        .longIn(def.shareMaxRecompute(), 0, Long.MAX_VALUE / 4))
                .build();
    }

    private static double shareThreshold(ConfigNode n, double def) {
        n.rule("0 or >= 1");
        double v = n.doubleAtLeast(def, 0.0);
        if (v != 0 && v < 1) {
            n.reject(String.valueOf(v), "0 (off) or a number >= 1.0");
            return def;
        }
        return v;
    }
}
