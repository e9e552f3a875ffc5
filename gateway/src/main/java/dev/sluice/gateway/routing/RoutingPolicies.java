package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.config.RoutingConfig.Policy;
import dev.sluice.gateway.config.RoutingConfig.RolePolicy;
import java.util.List;
import java.util.Optional;

/** Builds the routing policy a role's configuration names, and says which reasons each can give. */
public final class RoutingPolicies {
    private RoutingPolicies() {
    }

    /** A new policy (with fresh state) for {@code role}; a unified worker follows the prefill settings. */
    public static RoutingPolicy create(RoutingConfig cfg, WorkerRole role) {
        return create(cfg, role, Optional.empty());
    }

    /** As {@link #create(RoutingConfig, WorkerRole)}; a prefill (or unified) cache_aware routes by {@code kvView} when fresh. */
    public static RoutingPolicy create(RoutingConfig cfg, WorkerRole role, Optional<KvCacheView> kvView) {
        return create(cfg, role, kvView, Optional.empty());
    }

    /**
     * As above; with {@code fleet} (coordinated replicas) a prefill (or unified) cache_aware's share
     * guard judges the fleet's recent load, not this replica's alone.
     */
    public static RoutingPolicy create(RoutingConfig cfg, WorkerRole role, Optional<KvCacheView> kvView,
                                       Optional<FleetRoutedLoad> fleet) {
        RolePolicy p = role == WorkerRole.DECODE ? cfg.decode() : cfg.prefill();
        return switch (p.policy()) {
            case ROUND_ROBIN -> new RoundRobinRouting();
            case LEAST_LOAD -> new LeastLoadPolicy(role);
            case POWER_OF_TWO -> new PowerOfTwoPolicy(role);
            case CACHE_AWARE -> role == WorkerRole.DECODE ? new CacheAwarePolicy(role, p.cacheAware())
                    : new CacheAwarePolicy(role, p.cacheAware(), kvView, fleet);
        };
    }

    /** Every {@code reason} label the named policy can give (to export its counters at 0 up front); empty for a name not configured. */
    public static List<String> reasons(String policyName) {
        for (Policy p : Policy.values()) {
            if (p.label().equals(policyName)) {
                return reasons(p);
            }
        }
        return List.of();
    }

    private static List<String> reasons(Policy p) {
        return switch (p) {
            case ROUND_ROBIN -> List.of(RoundRobinRouting.REASON);
            case LEAST_LOAD -> List.of(LeastLoadPolicy.REASON);
            case POWER_OF_TWO -> List.of(PowerOfTwoPolicy.REASON);
            case CACHE_AWARE -> List.of(CacheAwarePolicy.PREFIX_HIT, CacheAwarePolicy.PREFIX_MISS,
                    CacheAwarePolicy.BALANCE_OVERRIDE, CacheAwarePolicy.SHARE_OVERRIDE, CacheAwarePolicy.AFFINITY_WAIT);
        };
    }
}
