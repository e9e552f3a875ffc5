package dev.sluice.testbed.sim;

/**
 * vLLM's {@code /metrics} (V1 engine, prometheus_client text format 0.0.4): the gauges and counters a
 * gateway reads, labelled {@code engine} and {@code model_name} as vLLM labels them, plus the
 * simulator's own {@code sim:} counters.
 */
final class VllmMetrics {
    private VllmMetrics() {
    }

    /**
     * The gauges one series per engine (data-parallel rank: {@code engine="0"}, {@code "1"}...), each
     * engine's KV usage over its own pool; counters and the histogram are the server's totals under
     * {@code engine="0"} (event loop).
     */
    static String render(SimWorker w) {
        String base = "engine=\"0\",model_name=\"" + w.cfg.model() + "\"";
        String labels = "{" + base + "}";
        WorkerStats s = w.stats();
        SimMetrics.RankLoad[] ranks = w.ranks.loads();
        StringBuilder b = new StringBuilder(4096);
        perEngine(b, w, ranks, "vllm:num_requests_running", "Number of requests in model execution batches.",
                r -> r.running);
        perEngine(b, w, ranks, "vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                SimMetrics.RankLoad::waiting);
        perEngine(b, w, ranks, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
                w.ranks::tokenUsage);
        metric(b, labels, "vllm:prefix_cache_queries_total", "counter",
                "Prefix cache queries, in terms of number of queried tokens.", s.prefixCacheQueryTokens());
        metric(b, labels, "vllm:prefix_cache_hits_total", "counter",
                "Prefix cache hits, in terms of number of cached tokens.", s.prefixCacheHitTokens());
        metric(b, labels, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
                w.metrics.promptTokens());
        metric(b, labels, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
                w.metrics.generatedTokens());
        b.append("# HELP vllm:request_success_total Count of successfully processed requests.\n");
        b.append("# TYPE vllm:request_success_total counter\n");
        sample(b, "vllm:request_success_total", "{" + base + ",finished_reason=\"length\"}", s.completed());
        sample(b, "vllm:request_success_total", "{" + base + ",finished_reason=\"abort\"}", s.aborted());
        w.metrics.histogram(b, "vllm:time_to_first_token_seconds", base);
        // not vLLM's: the simulator's own accounting (definitions in WorkerStats)
        SimMetrics.simCounter(b, labels, "kv_transfer_failures_total", "Requests whose KV transfer failed.",
                s.kvTransferFailures());
        SimMetrics.simCounter(b, labels, "stranded_kv_total",
                "Prefill legs whose KV no decode fetched before VLLM_NIXL_ABORT_REQUEST_TIMEOUT.", s.strandedKv());
        SimMetrics.simCounter(b, labels, "recomputed_prefills_total",
                "Decode requests without kv_transfer_params, prefilled on the decode.", s.recomputedPrefills());
        SimMetrics.simCounter(b, labels, "work_for_departed_clients_total",
                "Requests whose prefill or first decode step began after their client gave up.",
                s.workForDepartedClients());
        SimMetrics.simCounter(b, labels, "departed_client_work_seconds_total",
                "GPU seconds spent on requests after their client gave up.", s.departedClientWorkSeconds());
        return b.toString();
    }

    private static void perEngine(StringBuilder b, SimWorker w, SimMetrics.RankLoad[] ranks, String name, String help,
                                  java.util.function.ToDoubleFunction<SimMetrics.RankLoad> value) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(" gauge\n");
        for (SimMetrics.RankLoad r : ranks) {
            sample(b, name, "{engine=\"" + r.rank + "\",model_name=\"" + w.cfg.model() + "\"}",
                    value.applyAsDouble(r));
        }
    }

    private static void metric(StringBuilder b, String labels, String name, String type, String help, double value) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
        sample(b, name, labels, value);
    }

    private static void sample(StringBuilder b, String name, String labels, double value) {
        b.append(name).append(labels).append(' ').append(SimMetrics.num(value)).append('\n');
    }
}
