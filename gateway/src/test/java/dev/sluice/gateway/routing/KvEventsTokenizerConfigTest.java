package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.RoutingConfig;
import org.junit.jupiter.api.Test;

/** {@code routing.kv_events.tokenizer: hf} reads admission's tokenizer.json: one source of truth, checked. */
class KvEventsTokenizerConfigTest {
    private static final String WORKERS = "disaggregation: sglang\nworkers:\n  prefill:\n    - url: http://p0:30000\n"
            + "      bootstrap_port: 8998\n  decode:\n    - url: http://d0:30001\n";
    private static final String KV = "routing:\n  kv_events:\n    endpoint_pattern: \"tcp://{host}:5557\"\n";

    @Test
    void hfWithAdmissionsTokenizer() {
        GatewayConfig c = ConfigLoader.parse(WORKERS + "admission: {tokenizer: {path: /models/m/tokenizer.json}}\n"
                + KV + "    tokenizer: hf\n", "test");
        assertThat(c.routing().kvEvents().orElseThrow().tokenizer()).isEqualTo(RoutingConfig.Tokenizer.HF);
    }

    @Test
    void simStaysTheDefault() {
        assertThat(ConfigLoader.parse(WORKERS + KV, "test").routing().kvEvents().orElseThrow().tokenizer())
                .isEqualTo(RoutingConfig.Tokenizer.SIM);
    }

    @Test
    void hfWithoutATokenizerPathIsRejected() {
        assertThatThrownBy(() -> ConfigLoader.parse(WORKERS + KV + "    tokenizer: hf\n", "test"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("routing.kv_events.tokenizer: hf (expected: sim unless admission.tokenizer.path "
                        + "names the model's tokenizer.json)");
    }
}
