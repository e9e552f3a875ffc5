package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code pools:} read from YAML: each pool's own sections laid key by key over the top level's, the
 * gateway-wide keys kept the gateway's, and every mistake named with its path.
 */
class PoolsConfigTest {
    private static final String TWO_POOLS = """
            admission: { queue_timeout: 7s, max_pending_tokens: 50000, priorities: [gold, normal] }
            health: { interval: 3s }
            coordination: { redis: { url: "redis://10.0.0.9:6379" }, fleet: prod }
            pools:
              - name: big
                models: [deepseek-v3, ds]
                disaggregation: sglang
                workers:
                  prefill: [ { url: "http://10.0.0.1:30000", bootstrap_port: 8998 } ]
                  decode: [ { url: "http://10.0.0.2:30001" } ]
                admission: { max_queued_requests: 64, prefill: { max_inflight_requests: 2 } }
              - name: small
                models: [qwen3-8b]
                disaggregation: none
                workers:
                  unified: [ { url: "http://10.0.0.3:30000" } ]
                health: { timeout: 700ms }
            default_pool: small
            """;

    private static List<String> texts(String yaml) {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> ConfigLoader.parse(yaml, "gw.yaml"));
        assertThat(e).as("expected a ConfigException for:\n" + yaml).isNotNull();
        return e.problems().stream().map(ConfigProblem::located).toList();
    }

    @Test
    void eachPoolLaysItsOwnKeysOverTheTopLevels() {
        GatewayConfig c = ConfigLoader.parse(TWO_POOLS, "gw.yaml");
        PoolsConfig pools = c.pools();
        assertThat(pools.explicit()).isTrue();
        assertThat(pools.defaultPool()).isEqualTo("small");
        assertThat(pools.pools()).extracting(PoolsConfig.Pool::name).containsExactly("big", "small");

        GatewayConfig big = pools.pool("big").orElseThrow().view();
        assertThat(pools.pool("big").orElseThrow().models()).containsExactly("deepseek-v3", "ds");
        assertThat(big.disaggregation()).isEqualTo(DisaggregationMode.SGLANG);
        assertThat(big.admission().maxQueuedRequests()).as("its own").isEqualTo(64);
        assertThat(big.admission().prefillMaxInflightRequests()).as("its own, nested").isEqualTo(2);
        assertThat(big.admission().queueTimeout()).as("the top level's").isEqualTo(Duration.ofSeconds(7));
        assertThat(big.admission().maxPendingTokens()).as("the top level's").isEqualTo(50_000);
        assertThat(big.admission().priorities()).as("gateway-wide").containsExactly("gold", "normal");
        assertThat(big.health().interval()).as("the top level's").isEqualTo(Duration.ofSeconds(3));
        assertThat(big.coordination().orElseThrow().fleetKey()).isEqualTo("{sluice:prod.pool.big}:fleet");

        GatewayConfig small = pools.pool("small").orElseThrow().view();
        assertThat(small.disaggregation()).isEqualTo(DisaggregationMode.NONE);
        assertThat(small.workers().unified()).hasSize(1);
        assertThat(small.admission().maxQueuedRequests()).as("the default, no override").isEqualTo(32);
        assertThat(small.health().interval()).isEqualTo(Duration.ofSeconds(3));
        assertThat(small.health().timeout()).as("its own").isEqualTo(Duration.ofMillis(700));
        assertThat(small.coordination().orElseThrow().prefillRatesKey()).isEqualTo("{sluice:prod.pool.small}:prefill_rates");

        // the document's own configuration is the default pool's, carrying the list
        assertThat(c.disaggregation()).isEqualTo(DisaggregationMode.NONE);
        assertThat(c.workers()).isEqualTo(small.workers());
    }

    @Test
    void checkConfigsEffectiveFileReadsBackTheSame() {
        LoadedConfig loaded = ConfigLoader.check(TWO_POOLS, "gw.yaml", ConfigOverrides.none());
        assertThat(loaded.effectiveYaml()).contains("pools:").contains("deepseek-v3");
        assertThat(ConfigLoader.parse(loaded.effectiveYaml(), "effective")).isEqualTo(loaded.config());
    }

    @Test
    void mistakesAreNamedWithTheirPath() {
        assertThat(texts("""
                workers: { prefill: [ { url: "http://10.0.0.1:30000" } ], decode: [ { url: "http://10.0.0.2:1" } ] }
                pools:
                  - name: a
                    models: [m1]
                    workers: { prefill: [ { url: "http://10.0.0.1:30000" } ], decode: [ { url: "http://10.0.0.2:1" } ] }
                    admission: { api_keys: {}, max_queued_requests: 3 }
                  - name: a
                    models: [m1, m2]
                    workers: { prefill: [ { url: "http://10.0.0.1:30000" } ], decode: [ { url: "http://10.0.0.2:1" } ] }
                  - name: "bad name"
                    models: []
                    workers: { prefill: [ { url: "http://10.0.0.1:30000" } ], decode: [ { url: "http://10.0.0.2:1" } ] }
                  - models: [m3]
                default_pool: z
                """)).containsExactlyInAnyOrder(
                "gw.yaml:1: workers: object (expected: absent with pools: (each pool names its own workers))",
                "gw.yaml:6: pools[0].admission.api_keys: object (expected: absent in a pool: admission.api_keys is the "
                        + "gateway's, set it at the top level)",
                "gw.yaml:7: pools[1].name: a (expected: a name no other pool has)",
                "gw.yaml:8: pools[1].models[0]: m1 (expected: a model no other pool serves (pool a does))",
                "gw.yaml:10: pools[2].name: bad name (expected: " + CoordinationConfig.FLEET_NAME_EXPECTED + ")",
                "gw.yaml:11: pools[2].models: [] (expected: at least one model name)",
                "gw.yaml:13: pools[3].name: missing (expected: a value)",
                "gw.yaml:13: pools[3].workers: missing (expected: workers.prefill and workers.decode lists)",
                "gw.yaml:14: default_pool: z (expected: the name of a pool (a))");
    }

    @Test
    void defaultPoolWithoutPoolsIsRefusedAndAConfigWithoutPoolsIsOnePool() {
        assertThat(texts("""
                workers: { prefill: [ { url: "http://10.0.0.1:30000" } ], decode: [ { url: "http://10.0.0.2:1" } ] }
                default_pool: big
                """)).containsExactly("gw.yaml:2: default_pool: big (expected: absent without pools:)");
        GatewayConfig one = ConfigLoader.parse("""
                workers: { prefill: [ { url: "http://10.0.0.1:30000" } ], decode: [ { url: "http://10.0.0.2:1" } ] }
                """, "gw.yaml");
        assertThat(one.pools()).isEqualTo(PoolsConfig.IMPLICIT);
        assertThat(one.pools().explicit()).isFalse();
    }

    /** docs/configuration.md, "Model pools": the one-model file and its two-pool form are valid as written. */
    @Test
    void theDocsExamplesLoad() throws java.io.IOException {
        String docs = java.nio.file.Files.readString(ConfigSchemaTest.ROOT.resolve("docs/configuration.md"));
        String section = docs.substring(docs.indexOf("## Model pools"), docs.indexOf("## Reference"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?s)```yaml\n(.*?)```").matcher(section);
        List<GatewayConfig> loaded = new java.util.ArrayList<>();
        while (m.find()) {
            loaded.add(ConfigLoader.parse(m.group(1), "docs/configuration.md"));
        }
        assertThat(loaded).hasSize(2);
        assertThat(loaded.get(0).pools().explicit()).isFalse();
        PoolsConfig two = loaded.get(1).pools();
        assertThat(two.pools()).extracting(PoolsConfig.Pool::name).containsExactly("large", "small");
        // the same large pool as the one-model file: its workers, and the limits it kept or overrode
        GatewayConfig large = two.pool("large").orElseThrow().view();
        assertThat(large.workers()).isEqualTo(loaded.get(0).workers());
        assertThat(large.admission().maxQueuedRequests()).isEqualTo(loaded.get(0).admission().maxQueuedRequests());
        assertThat(large.admission().queueTimeout()).isEqualTo(loaded.get(0).admission().queueTimeout());
        assertThat(large.health()).isEqualTo(loaded.get(0).health());
    }
}
