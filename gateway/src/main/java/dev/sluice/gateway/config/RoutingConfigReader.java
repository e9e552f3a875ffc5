package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.config.RoutingConfig.CacheAware;
import dev.sluice.gateway.config.RoutingConfig.Policy;
import dev.sluice.gateway.config.RoutingConfig.RolePolicy;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;

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
 * </pre>
 */
public final class RoutingConfigReader {
    private static final String POLICIES = Arrays.stream(Policy.values()).map(Policy::label)
            .collect(Collectors.joining(", "));

    private RoutingConfigReader() {
    }

    /** Reads a {@code routing:} node parsed elsewhere (tests, tools); messages start with "routing.". */
    public static RoutingConfig read(JsonNode routing) {
        return read(new ConfigNode(routing, "routing"));
    }

    static RoutingConfig read(ConfigNode n) {
        n.allowOnly(Set.of("prefill", "decode", "direct_decode_max_tokens"));
        RoutingConfig defaults = RoutingConfig.defaults();
        return new RoutingConfig(role(n.child("prefill"), defaults.prefill()), role(n.child("decode"), defaults.decode()),
                n.child("direct_decode_max_tokens").longIn(0, 0, Long.MAX_VALUE / 4));
    }

    private static RolePolicy role(ConfigNode n, RolePolicy def) {
        n.allowOnly(Set.of("policy", "cache_aware"));
        return new RolePolicy(policy(n.child("policy"), def.policy()), cacheAware(n.child("cache_aware"), def.cacheAware()));
    }

    private static Policy policy(ConfigNode n, Policy def) {
        String v = n.text(def.label());
        for (Policy p : Policy.values()) {
            if (p.label().equals(v)) {
                return p;
            }
        }
        throw n.fail(v, "one of " + POLICIES);
    }

    private static CacheAware cacheAware(ConfigNode n, CacheAware def) {
        n.allowOnly(Set.of("match_threshold", "balance_abs_threshold", "balance_rel_threshold", "max_tree_size",
                "balance_share_threshold", "balance_share_half_life", "balance_share_max_recompute"));
        ConfigNode threshold = n.child("match_threshold");
        double match = threshold.doubleAtLeast(def.matchThreshold(), 0.0);
        if (match > 1.0) {
            throw threshold.fail(String.valueOf(match), "a number in [0.0, 1.0]");
        }
        return new CacheAware(match,
                n.child("balance_abs_threshold").longIn(def.balanceAbsThreshold(), 0, Long.MAX_VALUE / 4),
                n.child("balance_rel_threshold").doubleAtLeast(def.balanceRelThreshold(), 1.0),
                n.child("max_tree_size").longIn(def.maxTreeSize(), 1, Integer.MAX_VALUE),
                shareThreshold(n.child("balance_share_threshold"), def.shareThreshold()),
                n.child("balance_share_half_life").durationAtLeast(def.shareHalfLife(), Duration.ofMillis(1)),
                n.child("balance_share_max_recompute").longIn(def.shareMaxRecompute(), 0, Long.MAX_VALUE / 4));
    }

    private static double shareThreshold(ConfigNode n, double def) {
        double v = n.doubleAtLeast(def, 0.0);
        if (v != 0 && v < 1) {
            throw n.fail(String.valueOf(v), "0 (off) or a number >= 1.0");
        }
        return v;
    }
}
