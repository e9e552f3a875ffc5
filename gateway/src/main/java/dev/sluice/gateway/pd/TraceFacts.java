package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.tracing.RequestTrace;

/** What a request's trace says of it from the start, in the GenAI conventions' terms. */
final class TraceFacts {
    private TraceFacts() {
    }

    static RequestTrace.Facts of(GenerationRequest request, String rid) {
        // gen_ai.operation.name: chat for chat completions, text_completion for completions and SGLang's /generate
        String operation = switch (request.route()) {
            case CHAT_COMPLETIONS -> "chat";
            case COMPLETIONS, GENERATE -> "text_completion";
        };
        JsonNode model = request.body().get("model");
        return new RequestTrace.Facts(operation, model != null && model.isTextual() ? model.asText() : null,
                request.maxTokens(), request.route().path(), rid, request.stream());
    }
}
