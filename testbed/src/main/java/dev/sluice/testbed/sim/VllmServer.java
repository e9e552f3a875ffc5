package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.EventLoop;
import java.util.UUID;

/**
 * What both simulated vLLM roles (NixlConnector, {@code kv_both}) share: vLLM's HTTP surface
 * ({@link VllmRoutes}: OpenAI routes only, no {@code /generate}, {@code /abort_request},
 * {@code /get_load}; a request ends aborted when its connection closes), its request ids
 * ({@code chatcmpl-}/{@code cmpl-} + {@code X-Request-Id}), error bodies and metrics. A PD handoff is
 * one request, so a body that holds several ({@code n > 1}, a prompt list) with
 * {@code kv_transfer_params} is refused; so is any SGLang bootstrap field (a gateway mixing protocols).
 */
abstract class VllmServer extends EngineServer {

    VllmServer(SimConfig cfg, int ordinal, EventLoop loop) {
        super(cfg, ordinal, loop);
    }

    @Override
    public final boolean isVllm() {
        return true;
    }

    @Override
    void validate(GenerationRequest request) throws GenerationRequest.BadRequest {
        for (String field : request.pdFields()) {
            if (field.startsWith("bootstrap_")) {
                throw new GenerationRequest.BadRequest(field + " is SGLang's; a vLLM server takes kv_transfer_params");
            }
        }
    }

    /** vLLM names a request by its {@code X-Request-Id} when it has one. */
    @Override
    String requestId(Route route, String header) {
        String base = header == null || header.isBlank() ? UUID.randomUUID().toString().replace("-", "") : header;
        return (route == Route.CHAT ? "chatcmpl-" : "cmpl-") + base;
    }

    @Override
    ObjectNode errorBody(int status, String type, String message) {
        return Responses.vllmError(status, type, message);
    }

    @Override
    String renderMetrics() {
        return VllmMetrics.render(this);
    }

    @Override
    void admit(Exchange ex) {
        for (SimItem item : ex.items) {
            metrics.promptTokens(item.promptTokens);
        }
    }
}
