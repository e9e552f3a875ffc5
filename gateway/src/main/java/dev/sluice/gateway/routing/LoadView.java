package dev.sluice.gateway.routing;

/**
 * Admission's view of each worker's load, handed to a {@link RoutingPolicy} for one decision.
 * The window numbers are the gateway's own bookkeeping (exact and current); the reported ones
 * come from the worker's telemetry and are NaN when unknown or stale, never 0.
 */
public interface LoadView {
    /** Prompt tokens dispatched to it and not yet prefilled (prefill role). */
    long windowTokens(Worker w);

    /** Prefill: requests not yet prefilled; decode: streams until they end. */
    int windowRequests(Worker w);

    /** The worker's own waiting requests (sglang:num_queue_reqs / vllm:num_requests_waiting), NaN when unknown/stale. */
    double reportedQueue(Worker w);

    /** KV token usage 0..1, NaN when unknown/stale. */
    double kvUsage(Worker w);

    /**
     * The prompt tokens the worker says it has taken in since it started (its own counter, whoever
     * sent them: {@link WorkerTelemetry.Field#PROMPT_TOKENS_TOTAL}), NaN when unknown/stale.
     */
    double reportedPromptTokens(Worker w);
}
