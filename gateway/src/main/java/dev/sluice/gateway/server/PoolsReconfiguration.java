package dev.sluice.gateway.server;

import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.PoolsConfig;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A reload across model pools: each pool takes its own part of the new file ({@link PoolsConfig.Pool#view})
 * through its {@link LiveReconfiguration}, so its admission limits, health settings and workers change
 * live as they do without pools. The list of pools itself (their names, models, default and handoff
 * protocol) is fixed at start: a reload that changes it is refused whole, nothing applied.
 */
final class PoolsReconfiguration implements Reconfigurable {
    private final Pools pools;
    private volatile GatewayConfig current;

    PoolsReconfiguration(Pools pools, GatewayConfig current) {
        this.pools = pools;
        this.current = current;
    }

    /** The configuration as written (with {@code pools:}, the default pool's view carrying every pool). */
    GatewayConfig config() {
        return current;
    }

    @Override
    public synchronized AppliedChanges apply(GatewayConfig next) {
        if (!pools.explicit()) {
            if (next.pools().explicit()) {
                throw new IllegalArgumentException("pools: added; the list of pools changes only with a restart");
            }
            AppliedChanges a = pools.defaultPool().reconfiguration.apply(next);
            current = pools.defaultPool().config();
            return a;
        }
        List<GatewayConfig> views = new ArrayList<>();
        for (ModelPool p : pools.all()) {
            PoolsConfig.Pool n = next.pools().pool(p.name).orElseThrow(() -> new IllegalArgumentException(
                    "pools: pool " + p.name + " removed; the list of pools changes only with a restart"));
            if (!n.models().equals(p.models) || n.view().disaggregation() != p.config().disaggregation()) {
                throw new IllegalArgumentException("pools: pool " + p.name + "'s models or disaggregation changed; "
                        + "they change only with a restart");
            }
            views.add(n.view());
        }
        if (next.pools().pools().size() != pools.all().size()
                || !next.pools().defaultPool().equals(pools.defaultPool().name)) {
            throw new IllegalArgumentException("pools: a pool added or default_pool changed; the list of pools "
                    + "changes only with a restart");
        }
        Set<String> applied = new LinkedHashSet<>();
        Set<String> restart = new LinkedHashSet<>();
        for (int i = 0; i < views.size(); i++) {
            AppliedChanges a = pools.all().get(i).reconfiguration.apply(views.get(i));
            applied.addAll(a.applied());
            restart.addAll(a.restartRequired());
        }
        current = pools.defaultPool().config().toBuilder().pools(next.pools()).build();
        return new AppliedChanges(List.copyOf(applied), List.copyOf(restart));
    }
}
