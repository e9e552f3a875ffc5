package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

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
 */
public record RoutingConfig(RolePolicy prefill, RolePolicy decode, long directDecodeMaxTokens) {
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
        if (directDecodeMaxTokens < 0) {
            throw new IllegalArgumentException("directDecodeMaxTokens: " + directDecodeMaxTokens + " (expected: >= 0)");
        }
    }

    /** Everything at its default (what an absent {@code routing:} section means). */
    public static RoutingConfig defaults() {
        return new RoutingConfig(new RolePolicy(Policy.CACHE_AWARE, CacheAware.defaults(DEFAULT_PREFILL_BALANCE_ABS)),
                new RolePolicy(Policy.LEAST_LOAD, CacheAware.defaults(DEFAULT_DECODE_BALANCE_ABS)), 0);
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

        public CacheAware {
            if (!(matchThreshold >= 0 && matchThreshold <= 1)) {
                throw new IllegalArgumentException("matchThreshold: " + matchThreshold + " (expected: in [0, 1])");
            }
            if (balanceAbsThreshold < 0) {
                throw new IllegalArgumentException("balanceAbsThreshold: " + balanceAbsThreshold + " (expected: >= 0)");
            }
            if (!(balanceRelThreshold >= 1)) {
                throw new IllegalArgumentException("balanceRelThreshold: " + balanceRelThreshold + " (expected: >= 1)");
            }
            if (maxTreeSize < 1 || maxTreeSize > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("maxTreeSize: " + maxTreeSize + " (expected: in [1, 2^31-1])");
            }
            if (!(shareThreshold == 0 || shareThreshold >= 1)) {
                throw new IllegalArgumentException("shareThreshold: " + shareThreshold + " (expected: 0 or >= 1)");
            }
            Objects.requireNonNull(shareHalfLife, "shareHalfLife");
            if (shareHalfLife.isNegative() || shareHalfLife.isZero()) {
                throw new IllegalArgumentException("shareHalfLife: " + shareHalfLife + " (expected: > 0)");
            }
            if (shareMaxRecompute < 0) {
                throw new IllegalArgumentException("shareMaxRecompute: " + shareMaxRecompute + " (expected: >= 0)");
            }
        }

        /** The defaults, with a role's absolute balance threshold. */
        public static CacheAware defaults(long balanceAbsThreshold) {
            return new CacheAware(DEFAULT_MATCH_THRESHOLD, balanceAbsThreshold, DEFAULT_BALANCE_REL, DEFAULT_MAX_TREE_SIZE,
                    DEFAULT_SHARE_THRESHOLD, DEFAULT_SHARE_HALF_LIFE, DEFAULT_SHARE_MAX_RECOMPUTE);
        }
    }
}
