package dev.sluice.gateway.config;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The model pools ({@code pools:}): each a set of workers with its own handoff protocol, routing,
 * health and admission limits, serving the models it names. Without {@code pools:} there is one
 * implicit pool, {@code default}, that takes any model: the gateway of before pools.
 *
 * @param pools       the pools in file order; empty: the implicit one
 * @param defaultPool where a request that names no model goes, and SGLang's native endpoints
 */
public record PoolsConfig(List<Pool> pools, String defaultPool) {
    /** The name of the implicit pool, and of the metrics' {@code pool} label without {@code pools:}. */
    public static final String IMPLICIT_NAME = "default";
    public static final PoolsConfig IMPLICIT = new PoolsConfig(List.of(), IMPLICIT_NAME);

    public PoolsConfig {
        pools = List.copyOf(pools);
        Objects.requireNonNull(defaultPool, "defaultPool");
    }

    /** Whether {@code pools:} was written (with it, an unknown model is refused). */
    public boolean explicit() {
        return !pools.isEmpty();
    }

    /** The pool named {@code name}. */
    public Optional<Pool> pool(String name) {
        return pools.stream().filter(p -> p.name().equals(name)).findFirst();
    }

    /**
     * One pool.
     *
     * @param models the model names it serves (the first is its own; the others are aliases)
     * @param view   the whole configuration as this pool sees it: the gateway-wide sections and its own
     *               disaggregation, workers, routing, health and admission
     */
    public record Pool(String name, List<String> models, GatewayConfig view) {
        public Pool {
            Objects.requireNonNull(name, "name");
            models = List.copyOf(models);
            Objects.requireNonNull(view, "view");
        }
    }
}
