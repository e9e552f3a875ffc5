package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import org.junit.jupiter.api.Test;

/** routing.kv_events.max_memory read, and the capacity check serve refuses with (check-config warns). */
class KvViewCapacityTest {
    private static GatewayConfig config(int prefills, String kvExtra) {
        StringBuilder y = new StringBuilder("disaggregation: sglang\nworkers:\n  prefill:\n");
        for (int i = 0; i < prefills; i++) {
            y.append("    - url: http://p").append(i).append(":30000\n");
        }
        y.append("  decode:\n    - url: http://d0:30000\nrouting:\n  prefill: {policy: cache_aware}\n")
                .append("  kv_events:\n    endpoint_pattern: \"tcp://{host}:5557\"\n").append(kvExtra);
        return ConfigLoader.parse(y.toString(), "test.yaml");
    }

    @Test
    void withoutMaxMemoryEveryWorkerRankAtMaxBlocksMustFitHalfTheHeap() {
        long perRank = WorkerBlocks.bytesFor(1, 1L << 20);
        assertThat(perRank / (1 << 20)).as("bytes a block at the default").isBetween(40L, 50L);
        GatewayConfig sixteen = config(16, "");
        assertThat(KvViewCapacity.need(sixteen, 1L << 30)).isEqualTo(16 * perRank);
        assertThat(KvViewCapacity.problem(sixteen, 1L << 30)).hasValueSatisfying(p -> assertThat(p)
                .contains("routing.kv_events.max_blocks_per_worker").contains("routing.kv_events.max_memory")
                .contains("-Xmx"));
        assertThat(KvViewCapacity.problem(config(8, ""), 1L << 30)).as("8 worker-ranks fit -Xmx1g").isEmpty();
    }

    @Test
    void maxMemoryIsABytesSizeOrAShareOfTheHeap() {
        assertThat(KvViewCapacity.need(config(16, "    max_memory: 25%\n"), 1L << 30)).isEqualTo(256L << 20);
        assertThat(KvViewCapacity.problem(config(16, "    max_memory: 25%\n"), 1L << 30)).isEmpty();
        assertThat(KvViewCapacity.need(config(2, "    max_memory: 300MiB\n"), 1L << 30)).isEqualTo(300L << 20);
        assertThat(KvViewCapacity.problem(config(2, "    max_memory: 600MiB\n"), 1L << 30)).hasValueSatisfying(
                p -> assertThat(p).startsWith("routing.kv_events.max_memory: 600MiB"));
        assertThatThrownBy(() -> config(1, "    max_memory: 250%\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("routing.kv_events.max_memory");
        assertThatThrownBy(() -> config(1, "    max_message_size: 1KiB\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("routing.kv_events.max_message_size");
        assertThat(config(1, "").routing().kvEvents().orElseThrow().maxMessageSize()).isEqualTo(4L << 20);
    }
}
