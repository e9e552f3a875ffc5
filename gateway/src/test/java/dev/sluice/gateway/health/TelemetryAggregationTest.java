package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A worker exports one series per rank (SGLang's dp_rank with DP attention, vLLM's engine): counts
 * add up, ratios must not (docs/compatibility.md row 7).
 */
class TelemetryAggregationTest {

    @Test
    void seriesAreKeptPerNameWithSumAndMax() {
        String text = """
                # HELP sglang:token_usage The token usage.
                # TYPE sglang:token_usage gauge
                sglang:token_usage{model_name="m",engine_type="decode",tp_rank="0",pp_rank="0",dp_rank="0"} 0.6
                sglang:token_usage{model_name="m",engine_type="decode",tp_rank="1",pp_rank="0",dp_rank="1"} 0.55
                sglang:num_queue_reqs{model_name="m",engine_type="decode",tp_rank="0",pp_rank="0",dp_rank="0"} 3.0
                sglang:num_queue_reqs{model_name="m",engine_type="decode",tp_rank="1",pp_rank="0",dp_rank="1"} 4.0
                vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
                vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
                odd{label="with } brace",x="y"} 7
                bare 2
                """;
        Map<String, PrometheusText.Aggregate> m = PrometheusText.read(text);
        assertThat(m.get("sglang:token_usage").max()).isEqualTo(0.6);
        assertThat(m.get("sglang:token_usage").series()).isEqualTo(2);
        assertThat(m.get("sglang:num_queue_reqs").sum()).isEqualTo(7.0);
        assertThat(m.get("vllm:kv_cache_usage_perc").max()).isEqualTo(0.75);
        assertThat(m.get("odd").sum()).isEqualTo(7.0);
        assertThat(m.get("bare").sum()).isEqualTo(2.0);
    }

    /**
     * SGLang's prefill work and GPU time counters carry what they count in a label (collector.py,
     * SchedulerMetricsCollector: realtime_tokens_total by mode, gpu_execution_seconds_total by
     * category); those series are also kept apart, summed over ranks.
     */
    @Test
    void prefillCountersAreKeptByTheirModeOrCategory() {
        String text = """
                sglang:realtime_tokens_total{model_name="m",dp_rank="0",mode="prefill_compute"} 1000
                sglang:realtime_tokens_total{model_name="m",dp_rank="1",mode="prefill_compute"} 3000
                sglang:realtime_tokens_total{model_name="m",dp_rank="0",mode="prefill_cache"} 500
                sglang:gpu_execution_seconds_total{category="forward",model_name="m",dp_rank="0"} 0.5
                sglang:gpu_execution_seconds_total{category="forward",model_name="m",dp_rank="1"} 1.5
                sglang:gpu_execution_seconds_total{model_name="a,b=\\"c\\"",category="decode"} 9
                """;
        Map<String, PrometheusText.Aggregate> m = PrometheusText.read(text);
        assertThat(m.get(TelemetryPoller.PREFILL_TOKENS).sum()).isEqualTo(4000.0);
        assertThat(m.get("sglang:realtime_tokens_total{mode=\"prefill_cache\"}").sum()).isEqualTo(500.0);
        assertThat(m.get("sglang:realtime_tokens_total").sum()).isEqualTo(4500.0);
        assertThat(m.get(TelemetryPoller.FORWARD_SECONDS).sum()).isEqualTo(2.0);
        assertThat(m.get(TelemetryPoller.FORWARD_SECONDS).series()).isEqualTo(2);
        assertThat(m.get("sglang:gpu_execution_seconds_total{category=\"decode\"}").sum()).isEqualTo(9.0);
    }

    /**
     * The prefill passes' GPU time whatever the SGLang version calls their category: "forward"
     * (sglang@00ae9c15), "forward_extend" (sglang@49b0ed23 utils/device_timer.py), "extend" and
     * "split_prefill" (sglang@00251aaa, forward_mode.name.lower()); decode and idle passes are not
     * prefill time.
     */
    @Test
    void prefillGpuTimeIsReadUnderEachVersionsCategoryNames() {
        Map<String, PrometheusText.Aggregate> newer = PrometheusText.read("""
                sglang:gpu_execution_seconds_total{category="extend",dp_rank="0"} 1.25
                sglang:gpu_execution_seconds_total{category="split_prefill",dp_rank="0"} 0.25
                sglang:gpu_execution_seconds_total{category="decode",dp_rank="0"} 7
                sglang:gpu_execution_seconds_total{category="idle",dp_rank="0"} 3
                """);
        assertThat(newer.get(TelemetryPoller.FORWARD_SECONDS).sum()).isEqualTo(1.5);
        Map<String, PrometheusText.Aggregate> prefixed = PrometheusText.read("""
                sglang:gpu_execution_seconds_total{category="forward_extend"} 2
                sglang:gpu_execution_seconds_total{category="forward_decode"} 5
                sglang:gpu_execution_seconds_total{category="forward_idle"} 1
                """);
        assertThat(prefixed.get(TelemetryPoller.FORWARD_SECONDS).sum()).isEqualTo(2.0);
        assertThat(PrometheusText.read("sglang:gpu_execution_seconds_total{category=\"decode\"} 5\n"))
                .doesNotContainKey(TelemetryPoller.FORWARD_SECONDS);
    }

    /**
     * The prompt tokens a worker took in, whoever sent them: SGLang's computed and cached prefill
     * modes added (the cached series appears only with the first hit), over ranks; vLLM's
     * prompt_tokens_total as it is (it counts the whole prompt).
     */
    @Test
    void promptTokensAddTheComputedAndTheCachedModesOverRanks() {
        var field = dev.sluice.gateway.routing.WorkerTelemetry.Field.PROMPT_TOKENS_TOTAL;
        Map<String, PrometheusText.Aggregate> both = PrometheusText.read("""
                sglang:realtime_tokens_total{model_name="m",dp_rank="0",mode="prefill_compute"} 1000
                sglang:realtime_tokens_total{model_name="m",dp_rank="1",mode="prefill_compute"} 3000
                sglang:realtime_tokens_total{model_name="m",dp_rank="0",mode="prefill_cache"} 500
                sglang:realtime_tokens_total{model_name="m",dp_rank="0",mode="decode"} 99999
                """);
        assertThat(TelemetryPoller.fromMetrics(both)).containsEntry(field, 4500.0);
        Map<String, PrometheusText.Aggregate> noHitYet = PrometheusText.read("""
                sglang:realtime_tokens_total{model_name="m",dp_rank="0",mode="prefill_compute"} 1000
                """);
        assertThat(TelemetryPoller.fromMetrics(noHitYet)).containsEntry(field, 1000.0);
        Map<String, PrometheusText.Aggregate> vllm = PrometheusText.read("""
                vllm:prompt_tokens_total{engine="0",model_name="m"} 2500
                vllm:prefix_cache_hits_total{engine="0",model_name="m"} 2000
                """);
        assertThat(TelemetryPoller.fromMetrics(vllm)).containsEntry(field, 2500.0);
        assertThat(TelemetryPoller.fromMetrics(PrometheusText.read("sglang:num_queue_reqs 3\n")))
                .doesNotContainKey(field);
    }

    /** Row 10: a PD worker's waiting requests are in its PD queues, not in num_queue_reqs. */
    @Test
    void pdQueuesCountAsWaiting() {
        var values = new java.util.EnumMap<dev.sluice.gateway.routing.WorkerTelemetry.Field, Double>(
                dev.sluice.gateway.routing.WorkerTelemetry.Field.class);
        values.put(dev.sluice.gateway.routing.WorkerTelemetry.Field.QUEUE_REQUESTS, 0.0);
        values.put(dev.sluice.gateway.routing.WorkerTelemetry.Field.PREFILL_BOOTSTRAP_QUEUE_REQUESTS, 5.0);
        values.put(dev.sluice.gateway.routing.WorkerTelemetry.Field.DECODE_PREALLOC_QUEUE_REQUESTS, 2.0);
        values.put(dev.sluice.gateway.routing.WorkerTelemetry.Field.DECODE_TRANSFER_QUEUE_REQUESTS, 1.0);
        long now = System.nanoTime();
        var t = new dev.sluice.gateway.routing.WorkerTelemetry(now, true, values);
        assertThat(t.waitingRequests(dev.sluice.gateway.routing.WorkerRole.PREFILL, now, Long.MAX_VALUE)).isEqualTo(5.0);
        assertThat(t.waitingRequests(dev.sluice.gateway.routing.WorkerRole.DECODE, now, Long.MAX_VALUE)).isEqualTo(3.0);
        // the current name and the older one are both read
        assertThat(dev.sluice.gateway.routing.WorkerTelemetry.Field.PREFILL_BOOTSTRAP_QUEUE_REQUESTS.names())
                .containsExactly("sglang:num_prefill_bootstrap_queue_reqs", "sglang:num_prefill_prealloc_queue_reqs");
    }

    /** With DP attention each rank has its own series: its running and waiting requests, kept per rank. */
    @Test
    void requestsAreKeptPerDataParallelRank() {
        Map<String, PrometheusText.Aggregate> m = PrometheusText.read("""
                sglang:num_running_reqs{engine_type="decode",tp_rank="0",pp_rank="0",dp_rank="0"} 3
                sglang:num_running_reqs{engine_type="decode",tp_rank="0",pp_rank="0",dp_rank="1"} 1
                sglang:num_queue_reqs{engine_type="decode",tp_rank="0",pp_rank="0",dp_rank="1"} 2
                sglang:num_decode_transfer_queue_reqs{engine_type="decode",tp_rank="0",pp_rank="0",dp_rank="0"} 1
                """);
        assertThat(PrometheusText.rankRequests(m)).containsExactly(4.0, 3.0);
        assertThat(m.get("sglang:num_running_reqs").sum()).as("the worker's total is kept").isEqualTo(4.0);
        assertThat(PrometheusText.rankRequests(PrometheusText.read("vllm:num_requests_running{engine=\"0\"} 2\n")))
                .as("one vLLM engine: no ranks").isEmpty();
    }

    /**
     * vLLM labels each engine's gauges {@code engine} (PrometheusStatLogger): its ranks are the engines in
     * ascending numeric order (engine 10 after engine 2), each holding its running plus waiting requests.
     */
    @Test
    void vllmEnginesAreRanksInNumericOrder() {
        StringBuilder text = new StringBuilder("# TYPE vllm:num_requests_running gauge\n");
        for (int e : new int[] {10, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9, 11}) {
            text.append("vllm:num_requests_running{engine=\"").append(e).append("\",model_name=\"m\"} ").append(e)
                    .append('\n');
        }
        text.append("vllm:num_requests_waiting{engine=\"2\",model_name=\"m\"} 5\n");
        text.append("vllm:num_requests_waiting{model_name=\"m\",engine=\"11\"} 1\n");
        Map<String, PrometheusText.Aggregate> m = PrometheusText.read(text.toString());
        assertThat(PrometheusText.engines(m)).containsExactly("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11");
        assertThat(PrometheusText.rankRequests(m)).containsExactly(0.0, 1.0, 7.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0,
                10.0, 12.0);
        assertThat(m.get("vllm:num_requests_running").sum()).as("the worker's total is kept").isEqualTo(66.0);
        assertThat(PrometheusText.engines(PrometheusText.read("vllm:num_requests_running{model_name=\"m\"} 2\n")))
                .as("no engine label: no engines").isEmpty();
    }
}
