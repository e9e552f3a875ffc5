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

    /** vLLM workers are routed per rank only when their metrics show several engines: check-config notes it, never warns. */
    @Test
    void dpRanksOnVllmAreNotedAsDependingOnTheEngines() throws Exception {
        String vllm = "disaggregation: vllm\n" + WORKERS;
        assertThat(ConfigNotes.of(parse(vllm))).singleElement().asString()
                .startsWith("routing.dp_aware: auto (disaggregation: vllm): a vLLM worker is routed per rank when its "
                        + "/metrics shows more than one engine")
                .contains("X-data-parallel-rank").contains("routed per worker");
        assertThat(ConfigNotes.of(parse(vllm + "routing: {dp_aware: always}\n"))).singleElement().asString()
                .startsWith("routing.dp_aware: always (disaggregation: vllm)");
        assertThat(ConfigWarnings.of(parse(vllm + "routing: {dp_aware: always}\n"))).isEmpty();
        assertThat(ConfigWarnings.of(parse("disaggregation: none\nworkers: {unified: [{url: 'http://127.0.0.1:30000'}]}\n"
                + "routing: {dp_aware: always}\n"))).isEmpty();
        assertThat(ConfigNotes.of(parse(vllm + "routing: {dp_aware: never}\n"))).isEmpty();
        assertThat(ConfigNotes.of(parse(WORKERS))).as("SGLang reports its dp_size").isEmpty();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> parse(WORKERS + "routing: {dp_aware: off}\n"))
                .hasMessageContaining("routing.dp_aware: false (expected: one of auto, always, never)");
    }

    /** With pools, each pool is judged by its own protocol: a vLLM pool beside an SGLang one is named. */
    @Test
    void aVllmPoolIsNotedAndCheckConfigNamesThePool() throws Exception {
        String pools = """
                pools:
                  - name: large
                    models: [big]
                    disaggregation: sglang
                    workers: {prefill: [{url: 'http://127.0.0.1:30000'}], decode: [{url: 'http://127.0.0.1:30001'}]}
                  - name: small
                    models: [little]
                    disaggregation: vllm
                    workers: {prefill: [{url: 'http://127.0.0.1:30002'}], decode: [{url: 'http://127.0.0.1:30003'}]}
                """;
        assertThat(ConfigNotes.of(parse(pools))).singleElement().asString()
                .startsWith("pools[small].routing.dp_aware: auto (disaggregation: vllm): a vLLM worker is routed per rank");
        assertThat(ConfigNotes.of(parse("routing: {dp_aware: always}\n" + pools))).singleElement().asString()
                .startsWith("pools[small].routing.dp_aware: always (disaggregation: vllm)");
    }

    /** With pools, each pool's view is judged: a setting that fails only in the second pool is named with it. */
    @Test
    void everyPoolIsJudgedAndNamed() throws Exception {
        String pools = """
                health: { timeout: 5s }
                pools:
                  - name: big
                    models: [deepseek-v3]
                    workers: { prefill: [ { url: "http://127.0.0.1:30000" } ], decode: [ { url: "http://127.0.0.1:30001" } ] }
                  - name: small
                    models: [qwen3-8b]
                    workers: { prefill: [ { url: "http://127.0.0.1:30002" } ], decode: [ { url: "http://127.0.0.1:30003" } ] }
                    health: { timeout: 700ms }
                  - name: fast
                    models: [llama]
                    disaggregation: vllm
                    workers: { prefill: [ { url: "http://127.0.0.1:30004" } ], decode: [ { url: "http://127.0.0.1:30005" } ] }
                    routing: { dp_aware: always }
                default_pool: big
                """;
        GatewayConfig c = parse(pools);
        assertThat(ConfigWarnings.of(c)).singleElement().asString()
                .startsWith("pools[small].health.timeout: 700ms (expected: >= 2s)");
        assertThat(ConfigNotes.of(c)).singleElement().asString()
                .startsWith("pools[fast].routing.dp_aware: always (disaggregation: vllm)");
        // the top level's own view (the default pool's) warns of nothing: before, that was all that was judged
        assertThat(ConfigWarnings.of(c.pools().pool("big").orElseThrow().view())).isEmpty();
        assertThat(ConfigNotes.of(parse(pools.replace("routing: { dp_aware: always }", "routing: {}"))))
                .singleElement().asString().startsWith("pools[fast].routing.dp_aware: auto (disaggregation: vllm)");
    }
}
