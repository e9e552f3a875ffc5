package dev.sluice.testbed.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Hit rate, GPU time and the balance figures from /sim/stats before and after a run. */
class PrefillReportTest {
    private static WorkerProbe.Snapshot stats(int port, String role, long completed, long query, long hit,
                                              double busy) {
        ObjectNode s = ClientStream.JSON.createObjectNode();
        s.put("completed", completed).put("aborted", 0).put("failed", 0).put("prefixCacheQueryTokens", query)
                .put("prefixCacheHitTokens", hit).put("prefillBusySeconds", busy);
        return new WorkerProbe.Snapshot(URI.create("http://127.0.0.1:" + port), role, Map.of(), s, null);
    }

    @Test
    void deltasOverThePrefillWorkersOnly() {
        List<WorkerProbe.Snapshot> before = List.of(stats(1, "prefill", 10, 1_000, 500, 1.0),
                stats(2, "prefill", 0, 0, 0, 0), stats(3, "decode", 0, 0, 0, 0));
        List<WorkerProbe.Snapshot> after = List.of(stats(1, "prefill", 40, 31_000, 20_500, 4.0),
                stats(2, "prefill", 10, 10_000, 0, 2.0), stats(3, "decode", 50, 0, 0, 0));

        ObjectNode p = PrefillReport.of(before, after).orElseThrow();

        assertThat(p.path("workers").asInt()).isEqualTo(2);
        assertThat(p.path("requests").asInt()).isEqualTo(40);
        assertThat(p.path("prompt_tokens").asLong()).isEqualTo(40_000);
        assertThat(p.path("prefix_cache_hit_rate").asDouble()).isCloseTo(0.5, within(1e-9));
        assertThat(p.path("gpu_seconds").asDouble()).isCloseTo(5.0, within(1e-9));
        assertThat(p.at("/max_over_mean/requests").asDouble()).isCloseTo(1.5, within(1e-9));
        assertThat(p.at("/max_over_mean/prompt_tokens").asDouble()).isCloseTo(1.5, within(1e-9));
        assertThat(p.at("/max_over_mean/gpu_seconds").asDouble()).isCloseTo(1.2, within(1e-9));
        assertThat(p.at("/per_worker/1/prefix_cache_hit_rate").asDouble()).isZero();
        assertThat(PrefillReport.of(before.subList(2, 3), after.subList(2, 3))).isEmpty();
    }
}
