package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.config.DisaggregationMode;
import java.util.Optional;

/**
 * What a disaggregation mode cannot pair across a prefill and a decode, refused before admission
 * with a 400 that names the limit, instead of the workers' own error relayed as a 5xx or counted
 * against a healthy worker (docs/compatibility.md rows 2 and 3).
 * <ul>
 *   <li>SGLang, {@code n > 1}: the server turns a request with parallel samples into a batch whose
 *       samples get fresh random request ids and share one bootstrap room per prompt
 *       (sgl-project/sglang {@code python/sglang/srt/managers/tokenizer_manager.py}
 *       {@code _handle_batch_request}; {@code io_struct.py} {@code _normalize_bootstrap_params}), so
 *       the two halves do not pair reliably (upstream fixes in progress: sglang PRs #30723, #40297) and
 *       the gateway could not abort the samples by id.</li>
 *   <li>vLLM, {@code n > 1} or a list of prompts: the prefill's answer carries one
 *       {@code kv_transfer_params}, the first request's (vllm-project/vllm
 *       {@code vllm/entrypoints/openai/completion/serving.py},
 *       {@code request_output_to_completion_response}): the other prompts' or samples' KV cannot be
 *       handed over.</li>
 * </ul>
 * Unified workers ({@code disaggregation: none}) take both.
 */
public final class ModeLimits {
    private ModeLimits() {
    }

    public static Optional<ApiError> check(DisaggregationMode mode, GenerationRequest request) {
        if (request.parallelSamples() > 1 && mode == DisaggregationMode.SGLANG) {
            return Optional.of(ApiError.invalidField("unsupported_parameter", "n", "n > 1 (parallel sampling) is not "
                    + "supported with disaggregation: sglang: SGLang's PD servers give parallel samples fresh request ids "
                    + "and one bootstrap room per prompt, which does not pair a prefill with a decode reliably (sglang "
                    + "PRs #30723, #40297). Send n separate requests, or serve n > 1 from unified workers."));
        }
        if (request.parallelSamples() > 1 && mode == DisaggregationMode.VLLM) {
            return Optional.of(ApiError.invalidField("unsupported_parameter", "n", "n > 1 (parallel sampling) is not "
                    + "supported with disaggregation: vllm: vLLM's prefill answers one kv_transfer_params per request, "
                    + "so only one sample's KV could be handed to the decode. Send n separate requests."));
        }
        if (request.batchSize() > 0 && mode == DisaggregationMode.VLLM) {
            return Optional.of(ApiError.invalidField("unsupported_parameter", "prompt", "a list of " + request.batchSize()
                    + " prompts is not supported with disaggregation: vllm: vLLM's prefill answers the "
                    + "kv_transfer_params of the first prompt only. Send one request per prompt."));
        }
        return Optional.empty();
    }
}
