package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.routing.Worker;
import java.io.IOException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * vLLM's prefill leg: its whole (small, one-token) JSON answer is read; a failure fails the attempt
 * before any decode leg exists; a success hands its {@code kv_transfer_params} to the decode leg.
 */
final class VllmPrefillLeg extends BufferedPrefillHalf {
    private static final Logger log = LoggerFactory.getLogger(VllmPrefillLeg.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long LIMIT = 1 << 20;

    /** Takes the prefill's {@code kv_transfer_params} (null: none) and sends the decode leg. */
    private final Consumer<ObjectNode> answered;

    VllmPrefillLeg(Attempt at, Consumer<ObjectNode> answered) {
        super(at, LIMIT);
        this.answered = answered;
    }

    @Override
    void finished(byte[] bytes) {
        String message = WorkerErrorBody.message(bytes);
        Worker w = at.prefill;
        if (status / 100 != 2) {
            countFailure("status", message);
            failed(AttemptFailure.fromStatus(ApiError.fromWorker(status, "prefill", w.name(), message), w, status,
                    message));
            return;
        }
        JsonNode params;
        try {
            if (body.overflowed()) {
                throw new IOException("answer larger than " + LIMIT + " bytes");
            }
            JsonNode doc = JSON.readTree(bytes);
            if (doc == null || !doc.isObject()) {
                throw new IOException("not a JSON object");
            }
            params = doc.get("kv_transfer_params");
            if (params != null && !params.isNull() && !params.isObject()) {
                throw new IOException("kv_transfer_params is not an object");
            }
            if (params == null || params.isNull()) {
                // NixlConnector answers none when the prefill's one token ended the request (EOS, a stop string:
                // request_finished only hands over a request that stopped at max_tokens); then the decode leg goes
                // without params and computes the prompt itself. Stopped at its length and still none: the worker
                // is no KV producer, which is a deployment error worth a warning, not a failed request.
                String finish = doc.path("choices").path(0).path("finish_reason").asText("");
                if ("length".equals(finish)) {
                    log.warn("vLLM prefill answered no kv_transfer_params rid={} worker={} why=\"is it running with "
                            + "--kv-transfer-config and kv_role kv_producer or kv_both?\" (the decode computes the "
                            + "prompt again)", at.rid, w.name());
                } else {
                    log.debug("vLLM prefill finished at its first token rid={} finish_reason={}: decode recomputes",
                            at.rid, finish);
                }
                params = null;
            }
            if (scope.events().wantsPromptTokens()) {
                scope.events().promptTokens(PromptTokens.of(doc, "prompt_tokens"));
            }
        } catch (IOException e) {
            countFailure("malformed", "");
            failed(AttemptFailure.malformed(ApiError.malformed("prefill", w.name(), e.getMessage()), w));
            return;
        }
        scope.events().prefillSucceeded(at.key);
        answered.accept((ObjectNode) params);
    }

    @Override
    void failed(AttemptFailure f) {
        at.failed(f);
    }
}
