package dev.sluice.testbed.sim;

import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;

/**
 * A server's latency and token counters, and SGLang's {@code /metrics} in Prometheus text format
 * 0.0.4 with the names and labels a real server with {@code --enable-metrics} exposes (the subset a
 * gateway reads). vLLM's names are in {@link VllmMetrics}.
 */
final class SimMetrics {
    static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
    private static final double[] TTFT_BUCKETS = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

    /** What one data-parallel rank holds when scraped (built on the event loop by {@link DpRanks#loads}). */
    static final class RankLoad {
        final int rank;
        int running;
        int queue;
        int prefillPrealloc;
        int prefillInflight;
        int decodePrealloc;
        int decodeTransfer;
        long usedTokens;

        RankLoad(int rank) {
            this.rank = rank;
        }

        /** Requests waiting in any queue of the rank. */
        int waiting() {
            return queue + prefillPrealloc + decodePrealloc + decodeTransfer;
        }

        /** Requests the rank has: running, waiting, or (prefill) holding KV for the decode. */
        int requests() {
            return running + prefillInflight + waiting();
        }
    }

    private final LongAdder[] ttftBuckets = new LongAdder[TTFT_BUCKETS.length];
    private final LongAdder ttftCount = new LongAdder();
    private final LongAdder ttftMicros = new LongAdder();
    private final LongAdder generatedTokens = new LongAdder();
    private final LongAdder promptTokens = new LongAdder();
    private long lastTokens;
    private long lastNanos = System.nanoTime();
    private volatile double genThroughput;

    SimMetrics() {
        for (int i = 0; i < ttftBuckets.length; i++) {
            ttftBuckets[i] = new LongAdder();
        }
    }

    void observeTtft(double seconds) {
        for (int i = 0; i < TTFT_BUCKETS.length; i++) {
            if (seconds <= TTFT_BUCKETS[i]) {
                ttftBuckets[i].increment();
            }
        }
        ttftCount.increment();
        ttftMicros.add((long) (seconds * 1e6));
    }

    void tokenGenerated() {
        generatedTokens.increment();
    }

    long generatedTokens() {
        return generatedTokens.sum();
    }

    /** A request's prompt entered the engine (vLLM's {@code prompt_tokens} counter). */
    void promptTokens(int tokens) {
        promptTokens.add(tokens);
    }

    long promptTokens() {
        return promptTokens.sum();
    }

    /** Generated tokens per second since the previous scrape (at least one second apart). */
    synchronized double genThroughput() {
        long now = System.nanoTime();
        if (now - lastNanos >= 1_000_000_000L) {
            long tokens = generatedTokens.sum();
            genThroughput = (tokens - lastTokens) / ((now - lastNanos) / 1e9);
            lastTokens = tokens;
            lastNanos = now;
        }
        return genThroughput;
    }

    /**
     * SGLang's scheduler gauges, one series per data-parallel rank ({@code dp_rank} label; each rank's
     * {@code token_usage} over its own pool), as SGLang's SchedulerMetricsCollector labels them
     * (sgl-project/sglang@00ae9c1590d2d0bb6c0bfff39e312c34ae3dd538 python/sglang/srt/metrics/collector.py
     * SchedulerMetricsCollector.__init__). Counters and the TTFT histogram are the server's totals,
     * reported once under {@code dp_rank="0"}.
     */
    String render(SimWorker w, RankLoad[] ranks) {
        WorkerStats s = w.stats();
        StringBuilder b = new StringBuilder(4096 * ranks.length);
        double cacheHitRate = w.prefixCache.hitRate();
        double throughput = genThroughput() / ranks.length;
        gauges(b, w, ranks, "num_running_reqs", "The number of running requests.", r -> r.running);
        gauges(b, w, ranks, "num_queue_reqs", "The number of requests in the waiting queue.", r -> r.queue);
        gauges(b, w, ranks, "token_usage", "The token usage.", w.ranks::tokenUsage);
        gauges(b, w, ranks, "num_used_tokens", "The number of used tokens.", w.ranks::usedTokens);
        gauges(b, w, ranks, "max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.",
                r -> w.ranks.poolTokens());
        // over the server's life (SGLang logs it per batch): stable for a scrape at any pace
        gauges(b, w, ranks, "cache_hit_rate", "The prefix cache hit rate.", r -> cacheHitRate);
        gauges(b, w, ranks, "gen_throughput", "The generation throughput (token/s).", r -> throughput);
        // the current name (formerly num_prefill_prealloc_queue_reqs, e.g. at 00ae9c15): SchedulerMetricsCollector's
        // "PD disaggregation" gauges in the newer collector.py (found by the index, id 54493583113)
        gauges(b, w, ranks, "num_prefill_bootstrap_queue_reqs", "The number of requests in the prefill bootstrap queue.",
                r -> r.prefillPrealloc);
        gauges(b, w, ranks, "num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue.",
                r -> r.prefillInflight);
        gauges(b, w, ranks, "num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue.",
                r -> r.decodePrealloc);
        gauges(b, w, ranks, "num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue.",
                r -> r.decodeTransfer);
        gauges(b, w, ranks, "hicache_host_used_tokens", "The number of used tokens in the host KV cache.", r -> 0);
        gauges(b, w, ranks, "hicache_host_total_tokens", "The total number of tokens in the host KV cache.", r -> 0);
        String labels = labels(w, 0);
        counter(b, labels, "num_aborted_requests_total", "Number of requests aborted.", s.aborted());
        counter(b, labels, "num_bootstrap_failed_reqs_total", "Number of bootstrap failed requests.",
                s.bootstrapFailures());
        counter(b, labels, "num_transfer_failed_reqs_total", "Number of transfer failed requests.",
                s.kvTransferFailures());
        histogram(b, "sglang:time_to_first_token_seconds", labels.substring(1, labels.length() - 1));
        prefillCounters(b, w, labels);
        // not SGLang's: the simulator's own accounting (definitions in WorkerStats)
        simCounter(b, labels, "work_for_departed_clients_total",
                "Requests whose prefill or first decode step began after their client gave up.",
                s.workForDepartedClients());
        simCounter(b, labels, "departed_client_work_seconds_total",
                "GPU seconds spent on requests after their client gave up.", s.departedClientWorkSeconds());
        return b.toString();
    }

    /**
     * SGLang's prefill work counters: {@code sglang:realtime_tokens_total} by {@code mode} (prompt
     * tokens computed, {@code prefill_compute}, and those found in the prefix cache, {@code prefill_cache}:
     * scheduler_metrics_mixin.py {@code log_prefill_stats} passes each prefill batch's
     * {@code log_input_tokens} and {@code log_hit_tokens}) and, with the device timer
     * ({@code SGLANG_ENABLE_METRICS_DEVICE_TIMER}), {@code sglang:gpu_execution_seconds_total} by
     * {@code category}, the forward mode's name: current SGLang times each pass under
     * {@code forward_batch.forward_mode.name.lower()} ({@code extend} for a prefill; sgl-project/sglang@00251aaa
     * python/sglang/srt/utils/device_timer.py {@code device_timer_ctx} and its callers in the model
     * runners; older releases used {@code forward_extend}, and before that one {@code forward} for all):
     * sgl-project/sglang@00ae9c1590d2d0bb6c0bfff39e312c34ae3dd538 python/sglang/srt/metrics/collector.py
     * SchedulerMetricsCollector.__init__, increment_realtime_tokens, increment_gpu_execution_seconds; the
     * timer's gate: scheduler_metrics_mixin.py ({@code if ENABLE_METRICS_DEVICE_TIMER: DeviceTimer(
     * reporter=increment_gpu_execution_seconds)}, index id 65776473473). The simulator's forward time is
     * its prefill compute time (a PD prefill runs no decode passes).
     */
    private static void prefillCounters(StringBuilder b, SimWorker w, String labels) {
        String base = labels.substring(0, labels.length() - 1);
        b.append("# HELP sglang:realtime_tokens_total Total number of tokens processed (updated on each log interval). "
                + "mode: prefill_compute, prefill_cache, decode.\n");
        b.append("# TYPE sglang:realtime_tokens_total counter\n");
        b.append("sglang:realtime_tokens_total").append(base).append(",mode=\"prefill_compute\"} ")
                .append(num(w.promptTokensProcessed)).append('\n');
        // the prompt tokens each prefill batch found in the prefix cache (log_hit_tokens); the newer
        // collector skips a zero increment, so the series appears with the first hit
        long cached = w.stats().prefixCacheHitTokens();
        if (cached > 0) {
            b.append("sglang:realtime_tokens_total").append(base).append(",mode=\"prefill_cache\"} ")
                    .append(num(cached)).append('\n');
        }
        if (w.cfg.deviceTimerMetrics()) {
            b.append("# HELP sglang:gpu_execution_seconds_total Total time that GPU is busy executing a workload. "
                    + "Refer to ForwardMode for category labels.\n");
            b.append("# TYPE sglang:gpu_execution_seconds_total counter\n");
            b.append("sglang:gpu_execution_seconds_total").append(base).append(",category=\"extend\"} ")
                    .append(num(w.prefillBusyNanos / 1e9)).append('\n');
        }
    }

    /** SGLang's scheduler labels of one rank, in braces. */
    static String labels(SimWorker w, int rank) {
        return "{model_name=\"" + w.cfg.model() + "\",engine_type=\"" + w.role()
                + "\",tp_rank=\"0\",pp_rank=\"0\",dp_rank=\"" + rank + "\"}";
    }

    private static void gauges(StringBuilder b, SimWorker w, RankLoad[] ranks, String name, String help,
                               java.util.function.ToDoubleFunction<RankLoad> value) {
        b.append("# HELP sglang:").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE sglang:").append(name).append(" gauge\n");
        for (RankLoad r : ranks) {
            b.append("sglang:").append(name).append(labels(w, r.rank)).append(' ')
                    .append(num(value.applyAsDouble(r))).append('\n');
        }
    }

    static void simCounter(StringBuilder b, String labels, String name, String help, double value) {
        b.append("# HELP sim:").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE sim:").append(name).append(" counter\n");
        b.append("sim:").append(name).append(labels).append(' ').append(num(value)).append('\n');
    }

    private static void counter(StringBuilder b, String labels, String name, String help, long value) {
        b.append("# HELP sglang:").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE sglang:").append(name).append(" counter\n");
        b.append("sglang:").append(name).append(labels).append(' ').append(num(value)).append('\n');
    }

    /** The TTFT histogram under {@code name}; {@code base}: its labels without braces. */
    void histogram(StringBuilder b, String name, String base) {
        b.append("# HELP ").append(name).append(" Histogram of time to first token in seconds.\n");
        b.append("# TYPE ").append(name).append(" histogram\n");
        long count = ttftCount.sum();
        for (int i = 0; i < TTFT_BUCKETS.length; i++) {
            b.append(name).append("_bucket{").append(base).append(",le=\"").append(num(TTFT_BUCKETS[i]))
                    .append("\"} ").append(num(ttftBuckets[i].sum())).append('\n');
        }
        b.append(name).append("_bucket{").append(base).append(",le=\"+Inf\"} ").append(num(count)).append('\n');
        b.append(name).append("_sum{").append(base).append("} ").append(num(ttftMicros.sum() / 1e6)).append('\n');
        b.append(name).append("_count{").append(base).append("} ").append(num(count)).append('\n');
    }

    static String num(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? String.format(Locale.ROOT, "%.1f", v)
                : String.format(Locale.ROOT, "%s", v);
    }
}
