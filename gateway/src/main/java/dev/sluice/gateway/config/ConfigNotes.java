package dev.sluice.gateway.config;

import java.util.ArrayList;
import java.util.List;

/**
 * What a valid configuration will do that an operator may not expect, though nothing is wrong with
 * it: {@code check-config} prints these as notes (a warning, {@link ConfigWarnings}, is a setting that
 * cannot work). Pure: the same config, the same list.
 */
public final class ConfigNotes {
    /**
     * vLLM takes a data-parallel rank only from its {@code X-data-parallel-rank} header and reports no DP size
     * but exports its gauges per engine (see {@link dev.sluice.gateway.routing.RankPlanner}): whether a vLLM worker
     * is routed per rank is known only once its {@code /metrics} is read.
     */
    static final String DP_VLLM = "a vLLM worker is routed per rank when its /metrics shows more than one engine "
            + "(the engine label of vllm:num_requests_running; the rank goes in the X-data-parallel-rank header); "
            + "with one engine (dp_size 1, or external balancing) or unreadable metrics it is routed per worker, vLLM's "
            + "own balancer picking the rank (status and /admin/state say which, per worker)";

    private ConfigNotes() {
    }

    /** With {@code pools:}, each pool's view, its notes named {@code pools[<name>].<key>} (as {@link ConfigWarnings}). */
    public static List<String> of(GatewayConfig config) {
        return ConfigWarnings.perPool(config, ConfigNotes::ofView);
    }

    private static List<String> ofView(GatewayConfig config) {
        List<String> out = new ArrayList<>();
        RoutingConfig.DpAware dp = config.routing().dpAware();
        if (dp != RoutingConfig.DpAware.NEVER && config.disaggregation() == DisaggregationMode.VLLM) {
            out.add("routing.dp_aware: " + dp.label() + " (disaggregation: vllm): " + DP_VLLM);
        }
        return out;
    }
}
