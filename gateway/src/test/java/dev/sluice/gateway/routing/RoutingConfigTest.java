package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.config.RoutingConfig.Policy;
import dev.sluice.gateway.config.RoutingConfigReader;
import org.junit.jupiter.api.Test;

/** {@link RoutingConfigReader} and {@link RoutingPolicies}: YAML to policies. */
class RoutingConfigTest {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private static RoutingConfig read(String yaml) {
        try {
            JsonNode root = YAML.readTree(yaml);
            return RoutingConfigReader.read(root.get("routing"));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException(e);
        }
    }

    @Test
    void anAbsentSectionMeansTheDefaults() {
        RoutingConfig c = RoutingConfigReader.read((JsonNode) null);

        assertThat(c).isEqualTo(RoutingConfig.defaults());
        assertThat(c.prefill().policy()).isEqualTo(Policy.CACHE_AWARE);
        assertThat(c.decode().policy()).isEqualTo(Policy.LEAST_LOAD);
        assertThat(c.prefill().cacheAware().matchThreshold()).isEqualTo(0.5);
        assertThat(c.prefill().cacheAware().balanceAbsThreshold()).isEqualTo(16_384);
        assertThat(c.decode().cacheAware().balanceAbsThreshold()).isEqualTo(32);
        assertThat(c.prefill().cacheAware().balanceRelThreshold()).isEqualTo(1.5);
        assertThat(c.prefill().cacheAware().maxTreeSize()).isEqualTo(1L << 22);
        assertThat(c.directDecodeMaxTokens()).isZero();
    }

    @Test
    void readsEveryKey() {
        RoutingConfig c = read("""
                routing:
                  prefill:
                    policy: power_of_two
                    cache_aware: { match_threshold: 0.3, balance_abs_threshold: 8000, balance_rel_threshold: 2, max_tree_size: 1000000,
                                   balance_share_threshold: 1.2, balance_share_half_life: 30s, balance_share_max_recompute: 2000 }
                  decode:
                    policy: cache_aware
                  direct_decode_max_tokens: 256
                """);

        assertThat(c.prefill().policy()).isEqualTo(Policy.POWER_OF_TWO);
        assertThat(c.prefill().cacheAware().matchThreshold()).isEqualTo(0.3);
        assertThat(c.prefill().cacheAware().balanceAbsThreshold()).isEqualTo(8000);
        assertThat(c.prefill().cacheAware().balanceRelThreshold()).isEqualTo(2.0);
        assertThat(c.prefill().cacheAware().maxTreeSize()).isEqualTo(1_000_000);
        assertThat(c.prefill().cacheAware().shareThreshold()).isEqualTo(1.2);
        assertThat(c.prefill().cacheAware().shareHalfLife()).isEqualTo(java.time.Duration.ofSeconds(30));
        assertThat(c.prefill().cacheAware().shareMaxRecompute()).isEqualTo(2000);
        assertThat(c.decode().cacheAware().shareThreshold()).isEqualTo(1.3);
        assertThat(c.decode().policy()).isEqualTo(Policy.CACHE_AWARE);
        assertThat(c.decode().cacheAware().balanceAbsThreshold()).isEqualTo(32);
        assertThat(c.directDecodeMaxTokens()).isEqualTo(256);
    }

    @Test
    void namesTheKeyOfEveryMistake() {
        assertThatThrownBy(() -> read("routing: { prefill: { policy: foo } }")).isInstanceOf(ConfigException.class)
                .hasMessage("routing.prefill.policy: foo (expected: one of round_robin, least_load, power_of_two, cache_aware)");
        assertThatThrownBy(() -> read("routing: { decode: { polcy: least_load } }"))
                .hasMessage("routing.decode.polcy: unknown key (expected one of: cache_aware, policy)");
        assertThatThrownBy(() -> read("routing: { prefil: {} }"))
                .hasMessageStartingWith("routing.prefil: unknown key");
        assertThatThrownBy(() -> read("routing: { prefill: { cache_aware: { match_threshold: 1.5 } } }"))
                .hasMessage("routing.prefill.cache_aware.match_threshold: 1.5 (expected: a number in [0.0, 1.0])");
        assertThatThrownBy(() -> read("routing: { prefill: { cache_aware: { balance_rel_threshold: 0.5 } } }"))
                .hasMessage("routing.prefill.cache_aware.balance_rel_threshold: 0.5 (expected: a number >= 1.0)");
        assertThatThrownBy(() -> read("routing: { prefill: { cache_aware: { balance_abs_threshold: -1 } } }"))
                .hasMessageStartingWith("routing.prefill.cache_aware.balance_abs_threshold: -1 (expected: an integer in [0, ");
        assertThatThrownBy(() -> read("routing: { decode: { cache_aware: { max_tree_size: 0 } } }"))
                .hasMessageStartingWith("routing.decode.cache_aware.max_tree_size: 0 (expected: an integer in [1, ");
        assertThatThrownBy(() -> read("routing: { prefill: { cache_aware: { balance_share_threshold: 0.8 } } }"))
                .hasMessage("routing.prefill.cache_aware.balance_share_threshold: 0.8 (expected: 0 (off) or a number >= 1.0)");
        assertThatThrownBy(() -> read("routing: { prefill: { cache_aware: { balance_share_half_life: 0s } } }"))
                .hasMessageStartingWith("routing.prefill.cache_aware.balance_share_half_life: 0s (expected: a duration >= ");
        assertThatThrownBy(() -> read("routing: { direct_decode_max_tokens: -5 }"))
                .hasMessageStartingWith("routing.direct_decode_max_tokens: -5 (expected: an integer in [0, ");
    }

    @Test
    void theFactoryBuildsEachRolesPolicy() {
        RoutingConfig defaults = RoutingConfig.defaults();
        assertThat(RoutingPolicies.create(defaults, WorkerRole.PREFILL)).isInstanceOf(CacheAwarePolicy.class);
        assertThat(RoutingPolicies.create(defaults, WorkerRole.UNIFIED)).isInstanceOf(CacheAwarePolicy.class);
        assertThat(RoutingPolicies.create(defaults, WorkerRole.DECODE)).isInstanceOf(LeastLoadPolicy.class);

        for (Policy p : Policy.values()) {
            RoutingConfig c = new RoutingConfig(new RoutingConfig.RolePolicy(p, defaults.prefill().cacheAware()),
                    defaults.decode(), 0);
            RoutingPolicy policy = RoutingPolicies.create(c, WorkerRole.PREFILL);
            assertThat(policy.name()).isEqualTo(p.label());
            assertThat(RoutingPolicies.reasons(policy.name())).isNotEmpty();
        }
        assertThat(RoutingPolicies.reasons("cache_aware")).containsExactly("prefix_hit", "prefix_miss", "balance_override",
                "share_override", "affinity_wait");
    }
}
