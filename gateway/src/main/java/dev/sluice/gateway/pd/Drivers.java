package dev.sluice.gateway.pd;

import dev.sluice.gateway.config.DisaggregationMode;
import dev.sluice.gateway.routing.Worker;

/** The protocol driver of the configured {@code disaggregation} mode: makes one {@link Attempt} per try. */
public interface Drivers {
    Attempt newAttempt(PdExchange ex, Worker prefill, Worker decode, String rid);

    /** Whether the mode runs a separate prefill worker (false: the first token is the prefill's end). */
    boolean disaggregated();

    static Drivers of(DisaggregationMode mode) {
        return switch (mode) {
            case SGLANG -> new Drivers() {
                @Override
                public Attempt newAttempt(PdExchange ex, Worker p, Worker d, String rid) {
                    return new SglangAttempt(ex, p, d, rid);
                }

                @Override
                public boolean disaggregated() {
                    return true;
                }
            };
            case VLLM -> new Drivers() {
                @Override
                public Attempt newAttempt(PdExchange ex, Worker p, Worker d, String rid) {
                    // p == d: a short prompt admitted to skip the prefill hop (routing.direct_decode_max_tokens);
                    // a vLLM decode without kv_transfer_params prefills it itself
                    return p == d ? new UnifiedAttempt(ex, d, rid) : new VllmAttempt(ex, p, d, rid);
                }

                @Override
                public boolean disaggregated() {
                    return true;
                }
            };
            case NONE -> new Drivers() {
                @Override
                public Attempt newAttempt(PdExchange ex, Worker p, Worker d, String rid) {
                    return new UnifiedAttempt(ex, d, rid);
                }

                @Override
                public boolean disaggregated() {
                    return false;
                }
            };
        };
    }
}
