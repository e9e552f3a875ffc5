package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Settings that validate but cannot work against the real servers: {@code check-config} prints
 * them, {@code serve} logs them at start and on every reload. A warning names the key, its value,
 * why it fails against the server and what to set instead. Pure: the same config, the same list.
 */
public final class ConfigWarnings {
    private ConfigWarnings() {
    }

    /**
     * With {@code pools:}, each pool's view is judged (its own protocol, health and routing, the top level's
     * where it sets none), each warning named {@code pools[<name>].<key>}; the top-level sections are only
     * defaults the pools inherit, so they are not judged on their own.
     */
    public static List<String> of(GatewayConfig config) {
        return perPool(config, ConfigWarnings::ofView);
    }

    /** {@code judge} of the configuration, or with pools of each pool's view, each line named {@code pools[<name>].}. */
    static List<String> perPool(GatewayConfig config, java.util.function.Function<GatewayConfig, List<String>> judge) {
        if (!config.pools().explicit()) {
            return judge.apply(config);
        }
        List<String> out = new ArrayList<>();
        for (PoolsConfig.Pool p : config.pools().pools()) {
            judge.apply(p.view()).forEach(line -> out.add("pools[" + p.name() + "]." + line));
        }
        return out;
    }

    private static List<String> ofView(GatewayConfig config) {
        List<String> out = new ArrayList<>();
        health(config, out);
        return out;
    }

    private static void health(GatewayConfig config, List<String> out) {
        if (config.disaggregation() == DisaggregationMode.VLLM) {
            return; // vLLM's /health answers at once; it has no /health_generate
        }
        HealthConfig h = config.health();
        String workers = config.disaggregation() == DisaggregationMode.NONE ? "if the workers are SGLang, " : "";
        Duration floor = HealthConfig.SGLANG_HEALTH_MINIMUM.multipliedBy(2);
        if (h.timeout().compareTo(floor) < 0) {
            out.add("health.timeout: " + Durations.format(h.timeout()) + " (" + workers + "expected: >= "
                    + Durations.format(floor) + "): SGLang's /health runs a one-token generation and polls for it "
                    + "once a second (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION, on by default), so it never answers "
                    + "in under ~1 s: every check fails and no worker becomes ready. Use the default "
                    + Durations.format(HealthConfig.DEFAULT_CHECK_TIMEOUT)
                    + ", or start the workers with SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0");
        }
        boolean generate = !h.generateInterval().isZero();
        if (generate && h.generateTimeout().compareTo(floor) < 0) {
            out.add("health.generate_timeout: " + Durations.format(h.generateTimeout()) + " (" + workers
                    + "expected: >= " + Durations.format(floor) + "): SGLang's /health_generate polls once a second "
                    + "and never answers in under ~1 s: every check fails");
        } else if (generate && h.generateTimeout().compareTo(HealthConfig.SGLANG_HEALTH_CHECK_TIMEOUT) <= 0) {
            out.add("health.generate_timeout: " + Durations.format(h.generateTimeout()) + " (" + workers
                    + "expected: > " + Durations.format(HealthConfig.SGLANG_HEALTH_CHECK_TIMEOUT) + "): a worker busy "
                    + "with a long prefill answers /health_generate only when output appears (up to SGLang's "
                    + "HEALTH_CHECK_TIMEOUT, 20 s): a shorter timeout can eject a busy, healthy worker");
        }
    }
}
