package dev.sluice.gateway.routing;

import java.util.List;
import java.util.Map;

/**
 * What a worker last said about its own load, from its {@code /get_load} and {@code /metrics}
 * (SGLang names). The one place the gateway keeps these numbers: metrics re-export them, and
 * routing and admission can read them. A value the worker did not report is NaN, never 0.
 *
 * @param fetchedAtNanos  when the last successful poll completed ({@code System.nanoTime()}), 0 if never
 * @param lastPollOk      whether the most recent poll succeeded
 * @param rankRequests    per data-parallel rank (index: SGLang's {@code dp_rank} label), the requests it
 *                        reports running or waiting; empty when the worker reports no rank
 */
public record WorkerTelemetry(long fetchedAtNanos, boolean lastPollOk, Map<Field, Double> values,
                              List<Double> rankRequests) {

    /** How a number's series (one per rank) become one number: counts add up, a ratio is the fullest rank's. */
    public enum Over { SUM, MAX }

    /**
     * The numbers kept, with the SGLang metric each comes from and the vLLM one where vLLM has it
     * (a vLLM worker's cache hit rate is computed from {@code vllm:prefix_cache_hits_total /
     * vllm:prefix_cache_queries_total}). A worker exports one series per data-parallel rank
     * (SGLang's {@code dp_rank} label, vLLM's {@code engine}): counts are summed over them, ratios
     * take the max (two ranks at 60% KV usage are a worker at 60%, not 120%). The PD queue gauges
     * hold what a PD worker has waiting: a PD prefill's requests wait in its bootstrap queue and a
     * decode's in its prealloc and transfer queues until their KV is in, then in its waiting queue
     * ({@code num_queue_reqs}) until its running batch has room (sgl-project/sglang
     * {@code python/sglang/srt/metrics/collector.py}, {@code SchedulerStats};
     * sgl-project/sglang@278e503a5e16252fb4ff513018b6a73e30976f63 {@code python/sglang/srt/disaggregation/decode.py}).
     */
    public enum Field {
        QUEUE_REQUESTS(Over.SUM, "sglang:num_queue_reqs", "vllm:num_requests_waiting"),
        RUNNING_REQUESTS(Over.SUM, "sglang:num_running_reqs", "vllm:num_requests_running"),
        // vLLM before 0.10 called it gpu_cache_usage_perc
        TOKEN_USAGE(Over.MAX, "sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        CACHE_HIT_RATE(Over.MAX, "sglang:cache_hit_rate"),
        USED_TOKENS(Over.SUM, "sglang:num_used_tokens"),
        MAX_TOTAL_TOKENS(Over.SUM, "sglang:max_total_num_tokens"),
        GEN_THROUGHPUT(Over.SUM, "sglang:gen_throughput"),
        TRANSFER_FAILED_TOTAL(Over.SUM, "sglang:num_transfer_failed_reqs_total"),
        BOOTSTRAP_FAILED_TOTAL(Over.SUM, "sglang:num_bootstrap_failed_reqs_total"),
        HICACHE_HOST_USED_TOKENS(Over.SUM, "sglang:hicache_host_used_tokens"),
        HICACHE_HOST_TOTAL_TOKENS(Over.SUM, "sglang:hicache_host_total_tokens"),
        /** A PD prefill's bootstrap queue: requests waiting for their decode peer before they are computed (older SGLang: "prealloc"). */
        PREFILL_BOOTSTRAP_QUEUE_REQUESTS(Over.SUM, "sglang:num_prefill_bootstrap_queue_reqs",
                "sglang:num_prefill_prealloc_queue_reqs"),
        /** A PD prefill's requests computed, their KV being sent (older SGLang spelt it "infight"). */
        PREFILL_INFLIGHT_QUEUE_REQUESTS(Over.SUM, "sglang:num_prefill_inflight_queue_reqs",
                "sglang:num_prefill_infight_queue_reqs"),
        /** A PD decode's requests waiting for KV memory to be allocated. */
        DECODE_PREALLOC_QUEUE_REQUESTS(Over.SUM, "sglang:num_decode_prealloc_queue_reqs"),
        /** A PD decode's requests whose KV is on its way. */
        DECODE_TRANSFER_QUEUE_REQUESTS(Over.SUM, "sglang:num_decode_transfer_queue_reqs"),
        /** From {@code /v1/loads} (or the older {@code /get_load}): {@code num_waiting_reqs} summed over ranks. */
        LOAD_WAITING_REQUESTS(Over.SUM),
        /**
         * Prompt tokens per second of GPU forward time, derived from two polls of SGLang's counters
         * {@code sglang:realtime_tokens_total{mode="prefill_compute"}} and
         * {@code sglang:gpu_execution_seconds_total} of its prefill passes (exported with
         * {@code SGLANG_ENABLE_METRICS_DEVICE_TIMER}), times the number of ranks reporting: admission's
         * prior for a prefill worker's rate.
         */
        PREFILL_COMPUTE_RATE(Over.SUM),
        /**
         * Prompt tokens the worker has taken in since it started, computed and found in its prefix
         * cache alike: SGLang's {@code sglang:realtime_tokens_total{mode="prefill_compute"}} plus
         * {@code {mode="prefill_cache"}} (sgl-project/sglang@00ae9c1590d2d0bb6c0bfff39e312c34ae3dd538
         * python/sglang/srt/metrics/collector.py, {@code increment_realtime_tokens}, called with each
         * prefill batch's {@code log_input_tokens} and {@code log_hit_tokens}; a mode's series appears
         * with its first non-zero increment, so a missing {@code prefill_cache} reads as 0), or vLLM's
         * {@code vllm:prompt_tokens_total} (the whole prompt of each request as it finishes prefill:
         * vllm-project/vllm@28ed1fb87ed5686e1d4d0cf4134b8e05d8a25a8a vllm/v1/metrics/stats.py,
         * {@code IterationStats.update_from_output}). A counter, summed over ranks: what every gateway
         * replica reads alike, so {@code cache_aware}'s share guard judges the fleet's traffic by its growth.
         */
        PROMPT_TOKENS_TOTAL(Over.SUM);

        private final Over over;
        private final List<String> names;

        Field(Over over, String... names) {
            this.over = over;
            this.names = List.of(names);
        }

        /** How this number's series are combined. */
        public Over over() {
            return over;
        }

        /** The metric names it is read from, in order of preference (SGLang's, older spellings, vLLM's); empty: not from /metrics. */
        public List<String> names() {
            return names;
        }
    }

    public static final WorkerTelemetry NONE = new WorkerTelemetry(0, false, Map.of());

    public WorkerTelemetry {
        values = Map.copyOf(values);
        rankRequests = List.copyOf(rankRequests);
    }

    public WorkerTelemetry(long fetchedAtNanos, boolean lastPollOk, Map<Field, Double> values) {
        this(fetchedAtNanos, lastPollOk, values, List.of());
    }

    /** Requests the worker reports at {@code rank} (running and waiting), NaN when unknown or stale. */
    public double rankRequests(int rank, long nowNanos, long staleAfterNanos) {
        if (fetchedAtNanos == 0 || nowNanos - fetchedAtNanos > staleAfterNanos || rank >= rankRequests.size()) {
            return Double.NaN;
        }
        return rankRequests.get(rank);
    }

    /** Seconds since the last successful poll, or +Inf if there never was one. */
    public double ageSeconds(long nowNanos) {
        return fetchedAtNanos == 0 ? Double.POSITIVE_INFINITY : (nowNanos - fetchedAtNanos) / 1e9;
    }

    /**
     * Requests waiting at the worker, wherever its server keeps them: the scheduler's waiting queue
     * plus, on a PD worker, the queues in front of it (a prefill's bootstrap queue; a decode's prealloc
     * and transfer queues). NaN if the worker reported none of them (or they are stale).
     */
    public double waitingRequests(WorkerRole role, long nowNanos, long staleAfterNanos) {
        double q = value(Field.QUEUE_REQUESTS, nowNanos, staleAfterNanos);
        if (Double.isNaN(q)) {
            return value(Field.LOAD_WAITING_REQUESTS, nowNanos, staleAfterNanos);
        }
        if (role == WorkerRole.PREFILL) {
            q += orZero(value(Field.PREFILL_BOOTSTRAP_QUEUE_REQUESTS, nowNanos, staleAfterNanos));
        } else if (role == WorkerRole.DECODE) {
            q += orZero(value(Field.DECODE_PREALLOC_QUEUE_REQUESTS, nowNanos, staleAfterNanos))
                    + orZero(value(Field.DECODE_TRANSFER_QUEUE_REQUESTS, nowNanos, staleAfterNanos));
        }
        return q;
    }

    private static double orZero(double v) {
        return Double.isNaN(v) ? 0 : v;
    }

    /** The value if fresh (younger than {@code staleAfterNanos}) and reported; NaN otherwise. */
    public double value(Field f, long nowNanos, long staleAfterNanos) {
        if (fetchedAtNanos == 0 || nowNanos - fetchedAtNanos > staleAfterNanos) {
            return Double.NaN;
        }
        Double v = values.get(f);
        return v == null ? Double.NaN : v;
    }
}
