package dev.sluice.gateway.pd;

import dev.sluice.gateway.config.DisaggregationMode;
import dev.sluice.gateway.routing.Worker;

/**
 * The protocol driver of the configured {@code disaggregation} mode: makes one {@link Attempt} per try.
 *
 * @param disaggregated whether the mode runs a separate prefill worker (false: the first token is the prefill's end)
 */
public record Drivers(Factory factory, boolean disaggregated) {

    /** Makes the attempt for a granted pair ({@code prefill == decode} for a unified or direct-decode request). */
    interface Factory {
        Attempt newAttempt(RequestScope scope, Worker prefill, Worker decode, String rid);
    }

    Attempt newAttempt(RequestScope scope, Worker prefill, Worker decode, String rid) {
        return factory.newAttempt(scope, prefill, decode, rid);
    }

    public static Drivers of(DisaggregationMode mode) {
        return switch (mode) {
            case SGLANG -> new Drivers(SglangAttempt::new, true);
            // p == d: a short prompt admitted to skip the prefill hop (routing.direct_decode_max_tokens);
            // a vLLM decode without kv_transfer_params prefills it itself
            case VLLM -> new Drivers((scope, p, d, rid) -> p == d ? new UnifiedAttempt(scope, d, rid)
                    : new VllmAttempt(scope, p, d, rid), true);
            case NONE -> new Drivers((scope, p, d, rid) -> new UnifiedAttempt(scope, d, rid), false);
        };
    }
}
