package dev.sluice.gateway.pd;

import dev.sluice.gateway.config.DisaggregationMode;

/**
 * The protocol driver of the configured {@code disaggregation} mode: makes one {@link Attempt} per try.
 *
 * @param disaggregated whether the mode runs a separate prefill worker (false: the first token is the prefill's end)
 */
public record Drivers(Factory factory, boolean disaggregated) {

    /** Makes the attempt for a granted pair ({@code prefill == decode} for a unified or direct-decode request). */
    interface Factory {
        Attempt newAttempt(RequestScope scope, AttemptKey key);
    }

    Attempt newAttempt(RequestScope scope, AttemptKey key) {
        return factory.newAttempt(scope, key);
    }

    public static Drivers of(DisaggregationMode mode) {
        return switch (mode) {
            case SGLANG -> new Drivers(SglangAttempt::new, true);
            // p == d: a short prompt admitted to skip the prefill hop (routing.direct_decode_max_tokens);
            // a vLLM decode without kv_transfer_params prefills it itself
            case VLLM -> new Drivers((scope, key) -> key.prefill() == key.decode() ? new UnifiedAttempt(scope, key)
                    : new VllmAttempt(scope, key), true);
            case NONE -> new Drivers(UnifiedAttempt::new, false);
        };
    }
}
