package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * How the gateway picks a worker of each role for a request (YAML section {@code routing:}),
 * read by {@link RoutingConfigReader}. Admission's windows stay the hard limit; the policy only
 * chooses among the workers that have room. A unified worker ({@code disaggregation: none})
 * follows the prefill settings.
 *
 * <p>Defaults: prefill {@code cache_aware} (a prompt prefix the worker already holds is prefill
 * work saved), decode {@code least_load} (a decode's prefix cache hardly matters; its streams and
 * KV do), {@code direct_decode_max_tokens: 0} (off).
 *
 * @param prefill               the prefill (and unified) workers' policy
 * @param decode                the decode workers' policy
 * @param directDecodeMaxTokens conditional disaggregation: a prompt of at most this many tokens
 *                              skips the prefill worker and goes to a decode alone; 0 = off
 * @param dpAware               whether requests go to a data-parallel rank of a worker, or to the
 *                              worker, its own balancer picking the rank ({@code routing.dp_aware})
 */
public record RoutingConfig(RolePolicy prefill, RolePolicy decode, long directDecodeMaxTokens,
                            Optional<KvEventsConfig> kvEvents, DpAware dpAware) {
    /**
     * Prefill: prompt tokens apart before load beats a prefix hit; half the default prefill window
     * ({@code admission.prefill.max_inflight_tokens} 32768), about as much prefill as a long cached
     * prompt saves.
     */
    public static final long DEFAULT_PREFILL_BALANCE_ABS = 16_384;
    /** Decode: streams apart before load beats a prefix hit (sgl-model-gateway: 64 requests). */
    public static final long DEFAULT_DECODE_BALANCE_ABS = 32;
    /** 4 Mi characters, about 1M tokens: the order of one GPU's prefix cache; raise it for HiCache host tiers. */
    public static final long DEFAULT_MAX_TREE_SIZE = 1L << 22;

    public RoutingConfig {
        Objects.requireNonNull(prefill, "prefill");
        Objects.requireNonNull(decode, "decode");
        Objects.requireNonNull(kvEvents, "kvEvents");
        Objects.requireNonNull(dpAware, "dpAware");
    }

    /** Without the workers' KV events (cache_aware on its own prefix tree). */
    public RoutingConfig(RolePolicy prefill, RolePolicy decode, long directDecodeMaxTokens) {
        this(prefill, decode, directDecodeMaxTokens, Optional.empty(), DpAware.AUTO);
    }

    /** Everything at its default (what an absent {@code routing:} section means). */
    public static RoutingConfig defaults() {
        return builder()
                .prefill(new RolePolicy(Policy.CACHE_AWARE,
                        CacheAware.defaults("routing.prefill.cache_aware", DEFAULT_PREFILL_BALANCE_ABS)))
                .decode(new RolePolicy(Policy.LEAST_LOAD,
                        CacheAware.defaults("routing.decode.cache_aware", DEFAULT_DECODE_BALANCE_ABS)))
                .directDecodeMaxTokens(0).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().prefill(prefill).decode(decode).directDecodeMaxTokens(directDecodeMaxTokens)
                .kvEvents(kvEvents).dpAware(dpAware);
    }

    /** Checks each value as {@code routing:} does (whether the mode allows direct decodes: {@link GatewayConfig.Builder}). */
    public static final class Builder {
        private RolePolicy prefill;
        private RolePolicy decode;
        private Long directDecodeMaxTokens;
        private Optional<KvEventsConfig> kvEvents = Optional.empty();
        private DpAware dpAware = DpAware.AUTO;

        private Builder() {
        }

        public Builder prefill(RolePolicy v) {
            prefill = KeyCheck.present("routing.prefill", v);
            return this;
        }

        public Builder decode(RolePolicy v) {
            decode = KeyCheck.present("routing.decode", v);
            return this;
        }

        /** 0: every request goes through a prefill worker. */
        public Builder directDecodeMaxTokens(long v) {
            directDecodeMaxTokens = KeyCheck.atLeast("routing.direct_decode_max_tokens", v, 0L);
            return this;
        }

        /** The prefill workers' KV event subscription (routing.kv_events); empty: none. */
        public Builder kvEvents(Optional<KvEventsConfig> v) {
            kvEvents = Objects.requireNonNull(v, "routing.kv_events");
            return this;
        }

        /** Data-parallel ranks as routing targets: auto (the default), always, never. */
        public Builder dpAware(DpAware v) {
            dpAware = KeyCheck.present("routing.dp_aware", v);
            return this;
        }

        public RoutingConfig build() {
            return new RoutingConfig(KeyCheck.set("routing.prefill", prefill), KeyCheck.set("routing.decode", decode),
                    KeyCheck.set("routing.direct_decode_max_tokens", directDecodeMaxTokens), kvEvents, dpAware);
        }
    }

    /** The routing policies there are, by their YAML name (also the {@code policy} metric label). */
    public enum Policy {
        ROUND_ROBIN,
        LEAST_LOAD,
        POWER_OF_TWO,
        CACHE_AWARE;

        private final String label = name().toLowerCase(Locale.ROOT);

        public String label() {
            return label;
        }
    }

    /** One role's policy and, used by {@code cache_aware} only, its settings. */
    public record RolePolicy(Policy policy, CacheAware cacheAware) {
        public RolePolicy {
            Objects.requireNonNull(policy, "policy");
            Objects.requireNonNull(cacheAware, "cacheAware");
        }
    }

    /**
     * Settings of {@code cache_aware} ({@code routing.<role>.cache_aware:}).
     *
     * @param matchThreshold      share of the prompt (matched characters / key length) a worker must
     *                            already hold for a prefix hit; default 0.5 (sgl-model-gateway: 0.3,
     *                            but of the first message only; this is of the whole prompt)
     * @param balanceAbsThreshold load gap (prefill: tokens, decode: streams) between the best-matching
     *                            worker and the least loaded one past which load wins; default
     *                            {@value #DEFAULT_PREFILL_BALANCE_ABS} tokens / {@value #DEFAULT_DECODE_BALANCE_ABS} streams
     * @param balanceRelThreshold ... and only when the best match carries more than this times the least
     *                            loaded one's load; default 1.5 (as sgl-model-gateway)
     * @param maxTreeSize         prompt characters remembered per worker before its least recently used
     *                            prefixes are forgotten; default {@value #DEFAULT_MAX_TREE_SIZE}
     * @param shareThreshold      the share guard: a best match that was sent more than this times the
     *                            candidates' mean prompt tokens lately gives the request to a worker
     *                            below the mean; default {@value #DEFAULT_SHARE_THRESHOLD}; 0 = off
     * @param shareHalfLife       "lately": prompt tokens routed to each worker, decayed with this half-life;
     *                            default 60 s
     * @param shareMaxRecompute   ... but only when the other worker would recompute at most this many
     *                            more prompt tokens (so a long conversation stays where its history is);
     *                            default {@value #DEFAULT_SHARE_MAX_RECOMPUTE}
     */
    public record CacheAware(double matchThreshold, long balanceAbsThreshold, double balanceRelThreshold,
                             long maxTreeSize, double shareThreshold, Duration shareHalfLife, long shareMaxRecompute) {
        public static final double DEFAULT_MATCH_THRESHOLD = 0.5;
        public static final double DEFAULT_BALANCE_REL = 1.5;
        public static final double DEFAULT_SHARE_THRESHOLD = 1.3;
        public static final Duration DEFAULT_SHARE_HALF_LIFE = Duration.ofSeconds(60);
        public static final long DEFAULT_SHARE_MAX_RECOMPUTE = 4096;

        /** Builds settings that stand at {@code key} ({@code "routing.prefill.cache_aware"}), the prefix of every message. */
        public static Builder builder(String key) {
            return new Builder(key);
        }

        /** A builder from these settings, for the mapping at {@code key}. */
        public Builder toBuilder(String key) {
            return builder(key).matchThreshold(matchThreshold).balanceAbsThreshold(balanceAbsThreshold)
                    .balanceRelThreshold(balanceRelThreshold).maxTreeSize(maxTreeSize).shareThreshold(shareThreshold)
                    .shareHalfLife(shareHalfLife).shareMaxRecompute(shareMaxRecompute);
        }

        /** The defaults, with a role's absolute balance threshold; {@code key} as {@link #builder}. */
        public static CacheAware defaults(String key, long balanceAbsThreshold) {
            return builder(key).matchThreshold(DEFAULT_MATCH_THRESHOLD).balanceAbsThreshold(balanceAbsThreshold)
                    .balanceRelThreshold(DEFAULT_BALANCE_REL).maxTreeSize(DEFAULT_MAX_TREE_SIZE)
                    .shareThreshold(DEFAULT_SHARE_THRESHOLD).shareHalfLife(DEFAULT_SHARE_HALF_LIFE)
                    .shareMaxRecompute(DEFAULT_SHARE_MAX_RECOMPUTE).build();
        }

        /** The defaults, with a role's absolute balance threshold. */
        public static CacheAware defaults(long balanceAbsThreshold) {
            return defaults("routing.*.cache_aware", balanceAbsThreshold);
        }

        /** Checks each value with the bounds of {@code routing.<role>.cache_aware:}, named under its key. */
        public static final class Builder {
            private final String key;
            private Double matchThreshold;
            private Long balanceAbsThreshold;
            private Double balanceRelThreshold;
            private Long maxTreeSize;
            private Double shareThreshold;
            private Duration shareHalfLife;
            private Long shareMaxRecompute;

            private Builder(String key) {
                this.key = Objects.requireNonNull(key, "key") + ".";
            }

            public Builder matchThreshold(double v) {
                matchThreshold = KeyCheck.in(key + "match_threshold", v, 0, 1);
                return this;
            }

            public Builder balanceAbsThreshold(long v) {
                balanceAbsThreshold = KeyCheck.atLeast(key + "balance_abs_threshold", v, 0L);
                return this;
            }

            public Builder balanceRelThreshold(double v) {
                balanceRelThreshold = KeyCheck.atLeast(key + "balance_rel_threshold", v, 1.0);
                return this;
            }

            /** The prefix tree indexes characters with an int. */
            public Builder maxTreeSize(long v) {
                if (v < 1 || v > Integer.MAX_VALUE) {
                    throw KeyCheck.rejected(key + "max_tree_size", String.valueOf(v), "in [1, 2^31-1]");
                }
                maxTreeSize = v;
                return this;
            }

            /** 0: the share guard is off. */
            public Builder shareThreshold(double v) {
                if (!(v == 0 || v >= 1)) {
                    throw KeyCheck.rejected(key + "balance_share_threshold", ConfigNode.num(v), "0 or >= 1");
                }
                shareThreshold = v;
                return this;
            }

            public Builder shareHalfLife(Duration v) {
                shareHalfLife = KeyCheck.atLeast(key + "balance_share_half_life", v, Duration.ofMillis(1));
                return this;
            }

            public Builder shareMaxRecompute(long v) {
                shareMaxRecompute = KeyCheck.atLeast(key + "balance_share_max_recompute", v, 0L);
                return this;
            }

            public CacheAware build() {
                return new CacheAware(KeyCheck.set(key + "match_threshold", matchThreshold),
                        KeyCheck.set(key + "balance_abs_threshold", balanceAbsThreshold),
                        KeyCheck.set(key + "balance_rel_threshold", balanceRelThreshold),
                        KeyCheck.set(key + "max_tree_size", maxTreeSize),
                        KeyCheck.set(key + "balance_share_threshold", shareThreshold),
                        KeyCheck.set(key + "balance_share_half_life", shareHalfLife),
                        KeyCheck.set(key + "balance_share_max_recompute", shareMaxRecompute));
            }
        }
    }

    /**
     * Whether the gateway sends each request to a data-parallel rank of a worker
     * ({@code routing.dp_aware}). A worker with attention data parallelism is several schedulers, each
     * with its own running batch and KV cache; per worker, its own balancer picks the rank without
     * knowing the gateway's other requests or their prefixes.
     */
    public enum DpAware {
        /** Ranks for a worker whose own description reports {@code dp_size > 1} and that takes a rank per request (SGLang). */
        AUTO,
        /** As auto, and a worker that reports no {@code dp_size} is taken at {@code routing.kv_events.dp_ranks}. */
        ALWAYS,
        /** Per worker: the worker's own balancer picks the rank (not "off": YAML 1.1 reads a bare off as false). */
        NEVER;

        private final String label = name().toLowerCase(Locale.ROOT);

        public String label() {
            return label;
        }
    }

    /** How the gateway tokenizes a prompt to match it against the workers' KV events. */
    public enum Tokenizer {
        /** The testbed simulator's tokenizer (4 characters a token); token-id prompts are used as they are. */
        SIM,
        /**
         * The model's own tokenizer: {@code admission.tokenizer.path}'s tokenizer.json, and the chat template
         * and special tokens of the tokenizer_config.json beside it (docs/cache-affinity.md).
         */
        HF;

        private final String label = name().toLowerCase(Locale.ROOT);

        public String label() {
            return label;
        }
    }
}
