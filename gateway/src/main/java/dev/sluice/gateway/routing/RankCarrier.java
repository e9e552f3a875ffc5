package dev.sluice.gateway.routing;

/**
 * Where a worker request names the data-parallel rank it is for: SGLang reads it from the body
 * ({@code routed_dp_rank}), vLLM only from a header ({@code X-data-parallel-rank}). Which one a worker takes
 * is decided with its {@link RankPlan}, from what the worker said it is.
 */
public enum RankCarrier {
    /** SGLang: the body fields {@code routed_dp_rank} (and on a PD decode {@code disagg_prefill_dp_rank}). */
    BODY_FIELD,
    /** vLLM: the {@code X-data-parallel-rank} header, the engine's position among those its API server manages. */
    HEADER
}
