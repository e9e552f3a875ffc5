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
     * vLLM takes a data-parallel rank only from its {@code X-data-parallel-rank} header
     * (vllm-project/vllm vllm/entrypoints/openai serving, {@code _get_data_parallel_rank}) and its
     * {@code /v1/models} reports no DP size, so the gateway routes its workers whole.
     */
    static final String DP_VLLM = "vLLM reports no dp_size and takes no rank in the request body: its workers are "
            + "routed per worker, vLLM's own balancer picking the rank (SGLang workers with dp_size > 1 are routed "
            + "per rank)";

    private ConfigNotes() {
    }

    /** With {@code pools:}, each pool's view, its notes named {@code pools[<name>].<key>} (as {@link ConfigWarnings}). */
    public static List<String> of(GatewayConfig config) {
        return ConfigWarnings.perPool(config, ConfigNotes::ofView);
    }

    private static List<String> ofView(GatewayConfig config) {
        List<String> out = new ArrayList<>();
        if (config.routing().dpAware() == RoutingConfig.DpAware.AUTO
                && config.disaggregation() == DisaggregationMode.VLLM) {
            out.add("routing.dp_aware: auto (disaggregation: vllm): " + DP_VLLM);
        }
        return out;
    }
}
