package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** A health timeout under SGLang's own minimum can never pass (docs/compatibility.md row 1). */
class ConfigWarningsTest {
    private static GatewayConfig parse(String yaml) throws ConfigException {
        return ConfigLoader.parse(yaml, "test.yaml", ConfigOverrides.none());
    }

    private static final String WORKERS = "workers: {prefill: [{url: 'http://127.0.0.1:30000'}], "
            + "decode: [{url: 'http://127.0.0.1:30001'}]}\n";

    @Test
    void shippedDefaultsWarnOfNothing() throws Exception {
        assertThat(ConfigWarnings.of(parse(WORKERS))).isEmpty();
        assertThat(parse(WORKERS).health().timeout()).isEqualTo(HealthConfig.DEFAULT_CHECK_TIMEOUT);
    }

    @Test
    void aOneSecondHealthTimeoutAgainstSglangIsNamed() throws Exception {
        var warnings = ConfigWarnings.of(parse(WORKERS + "health: {timeout: 1s, generate_timeout: 5s}\n"));
        assertThat(warnings).hasSize(2);
        assertThat(warnings.get(0)).startsWith("health.timeout: 1s (expected: >= 2s)")
                .contains("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION");
        assertThat(warnings.get(1)).startsWith("health.generate_timeout: 5s (expected: > 20s)");
    }

    @Test
    void vllmHealthAnswersAtOnceSoNoWarning() throws Exception {
        assertThat(ConfigWarnings.of(parse("disaggregation: vllm\n" + WORKERS + "health: {timeout: 500ms}\n")))
                .isEmpty();
    }

    /** Row 13: a vLLM connector whose handoff the gateway cannot drive is refused with the reason. */
    @Test
    void unsupportedVllmConnectorsAreRefusedWithTheReason() throws Exception {
        assertThat(parse("disaggregation: vllm\nvllm_kv_connector: nixl\n" + WORKERS).disaggregation())
                .isEqualTo(DisaggregationMode.VLLM);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> parse("disaggregation: vllm\n"
                + "vllm_kv_connector: p2p_nccl\n" + WORKERS)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("vllm_kv_connector: p2p_nccl (expected: nixl: P2pNcclConnector addresses");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> parse("disaggregation: vllm\n"
                + "vllm_kv_connector: mooncake\n" + WORKERS)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("transfer_id");
        // in SGLang mode the key is not the workers' (SGLang's transfer backend is invisible to the gateway)
        assertThat(parse("vllm_kv_connector: mooncake\n" + WORKERS).disaggregation()).isEqualTo(DisaggregationMode.SGLANG);
    }
}
