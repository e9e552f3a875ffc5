package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.KvEventsConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class KvEventsConfigTest {
    private static final String WORKERS = "workers: { prefill: [ { url: \"http://p0:30000\" }, { url: \"http://p1:30000\" } ],"
            + " decode: [ { url: \"http://d0:30000\" } ] }\n";

    @Test
    void endpointsByWorkerThenThePattern() {
        GatewayConfig c = ConfigLoader.parse(WORKERS + "routing:\n  kv_events:\n    endpoints: {\"http://p0:30000\": "
                + "\"tcp://p0:6000\"}\n    endpoint_pattern: \"tcp://{host}:5557\"\n    stale_after: 5s\n", "test");
        KvEventsConfig kv = c.routing().kvEvents().orElseThrow();
        assertThat(kv.endpointOf("http://p0:30000", "p0")).hasValue("tcp://p0:6000");
        assertThat(kv.endpointOf("http://p1:30000", "p1")).hasValue("tcp://p1:5557");
        assertThat(kv.staleAfter()).isEqualTo(Duration.ofSeconds(5));
        assertThat(kv.maxBlocksPerWorker()).isEqualTo(KvEventsConfig.DEFAULT_MAX_BLOCKS);
        assertThat(kv.topic()).isEmpty();
        assertThat(kv.resubscribeAfter()).isEqualTo(KvEventsConfig.DEFAULT_RESUBSCRIBE_AFTER);
        assertThat(kv.dpRanks()).isEqualTo(1);
        assertThat(kv.rankEndpoints("tcp://p0:6000")).containsExactly("tcp://p0:6000");
    }

    @Test
    void dpRanksPublishOnTheFollowingPorts() {
        GatewayConfig c = ConfigLoader.parse(WORKERS + "routing:\n  kv_events:\n    endpoint_pattern: "
                + "\"tcp://{host}:5557\"\n    dp_ranks: 4\n    resubscribe_after: 2s\n", "test");
        KvEventsConfig kv = c.routing().kvEvents().orElseThrow();
        assertThat(kv.rankEndpoints(kv.endpointOf("http://p1:30000", "p1").orElseThrow()))
                .containsExactly("tcp://p1:5557", "tcp://p1:5558", "tcp://p1:5559", "tcp://p1:5560");
        assertThat(kv.resubscribeAfter()).isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    void absentOrWithoutEndpointsIsOff() {
        assertThat(ConfigLoader.parse(WORKERS, "test").routing().kvEvents()).isEmpty();
        assertThat(ConfigLoader.parse(WORKERS + "routing: {kv_events: {stale_after: 5s}}\n", "test").routing()
                .kvEvents()).isEmpty();
    }

    @Test
    void badValuesAreNamed() {
        assertThatThrownBy(() -> ConfigLoader.parse(WORKERS + "routing: {kv_events: {endpoint_pattern: \"http://x:1\","
                + " stale_after: 0s, tokenizer: gpt, dp_ranks: 0, resubscribe_after: 10ms}}\n", "test"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("routing.kv_events.endpoint_pattern: http://x:1 (expected: tcp://host:port)")
                .hasMessageContaining("routing.kv_events.stale_after: 0s (expected: a duration >= 1s)")
                .hasMessageContaining("routing.kv_events.tokenizer: gpt (expected: one of sim, hf)")
                .hasMessageContaining("routing.kv_events.dp_ranks: 0 (expected:")
                .hasMessageContaining("routing.kv_events.resubscribe_after: 10ms (expected: a duration >= 1s)");
    }
}
