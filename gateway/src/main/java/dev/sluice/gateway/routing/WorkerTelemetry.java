package dev.sluice.gateway.routing;

import java.util.Map;

/**
 * What a worker last said about its own load, from its {@code /get_load} and {@code /metrics}
 * (SGLang names). The one place the gateway keeps these numbers: metrics re-export them, and
 * routing and admission can read them. A value the worker did not report is NaN, never 0.
 *
 * @param fetchedAtNanos  when the last successful poll completed ({@code System.nanoTime()}), 0 if never
 * @param lastPollOk      whether the most recent poll succeeded
 */
public record WorkerTelemetry(long fetchedAtNanos, boolean lastPollOk, Map<Field, Double> values) {

    /**
     * The numbers kept, with the SGLang metric each comes from (summed over data-parallel ranks) and
     * the vLLM one where vLLM has it (a vLLM worker's cache hit rate is computed from
     * {@code vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total}).
     */
    public enum Field {
        QUEUE_REQUESTS("sglang:num_queue_reqs", "vllm:num_requests_waiting"),
        RUNNING_REQUESTS("sglang:num_running_reqs", "vllm:num_requests_running"),
        TOKEN_USAGE("sglang:token_usage", "vllm:kv_cache_usage_perc"),
        CACHE_HIT_RATE("sglang:cache_hit_rate"),
        USED_TOKENS("sglang:num_used_tokens"),
        MAX_TOTAL_TOKENS("sglang:max_total_num_tokens"),
        GEN_THROUGHPUT("sglang:gen_throughput"),
        TRANSFER_FAILED_TOTAL("sglang:num_transfer_failed_reqs_total"),
        BOOTSTRAP_FAILED_TOTAL("sglang:num_bootstrap_failed_reqs_total"),
        HICACHE_HOST_USED_TOKENS("sglang:hicache_host_used_tokens"),
        HICACHE_HOST_TOTAL_TOKENS("sglang:hicache_host_total_tokens"),
        /** From {@code /get_load}: {@code num_waiting_reqs} summed over ranks. */
        LOAD_WAITING_REQUESTS(null);

        private final String sglangName;
        private final String vllmName;

        Field(String sglangName) {
            this(sglangName, null);
        }

        Field(String sglangName, String vllmName) {
            this.sglangName = sglangName;
            this.vllmName = vllmName;
        }

        public String sglangName() {
            return sglangName;
        }

        /** vLLM's name for the same number, or null. */
        public String vllmName() {
            return vllmName;
        }
    }

    public static final WorkerTelemetry NONE = new WorkerTelemetry(0, false, Map.of());

    public WorkerTelemetry {
        values = Map.copyOf(values);
    }

    /** Seconds since the last successful poll, or +Inf if there never was one. */
    public double ageSeconds(long nowNanos) {
        return fetchedAtNanos == 0 ? Double.POSITIVE_INFINITY : (nowNanos - fetchedAtNanos) / 1e9;
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
