package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.api.GenerationRequest;
import java.util.Optional;

/**
 * The model name the clients ask for, as last seen on a request sent to a worker, so that the
 * gateway's own stall probes name one the workers serve: vLLM answers 404 to a {@code model} it
 * does not serve and accepts none at all (vllm-project/vllm@00153c8b7948077ebdfc5bfa14e403da41aaea6d
 * vllm/entrypoints/openai/models/serving.py {@code OpenAIModelRegistry.check_model}); SGLang
 * defaults it ({@code DEFAULT_MODEL_NAME}, sgl-project/sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a
 * python/sglang/srt/entrypoints/openai/protocol.py {@code CompletionRequest}). Thread-safe.
 */
public final class ServedModel {
    private volatile String name;

    /** Remembers {@code request}'s {@code model}, if it names one (one volatile read per request). */
    void seen(GenerationRequest request) {
        JsonNode m = request.body().get("model");
        if (m != null && m.isTextual() && !m.asText().equals(name)) {
            name = m.asText();
        }
    }

    /** The model clients asked for last; empty before any request (a probe then names none). */
    public Optional<String> name() {
        return Optional.ofNullable(name);
    }
}
