package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import dev.sluice.gateway.upstream.UpstreamFailure;
import java.io.IOException;

/**
 * vLLM's prefill leg: its whole (small, one-token) JSON answer is read; a failure fails the attempt
 * before any decode leg exists; a success hands its {@code kv_transfer_params} to the decode leg.
 */
final class VllmPrefillLeg extends BufferedPrefillHalf {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long LIMIT = 1 << 20;

    private final VllmAttempt vllm;

    VllmPrefillLeg(VllmAttempt at) {
        super(at, LIMIT);
        this.vllm = at;
    }

    @Override
    UpstreamCall call() {
        return vllm.prefillCall;
    }

    @Override
    void finished(byte[] bytes) {
        String message = WorkerErrorBody.message(bytes);
        Worker w = at.prefill;
        if (status / 100 != 2) {
            countFailure("status", message);
            at.failed(AttemptFailure.fromStatus(ApiError.fromWorker(status, "prefill", w.name(), message), w, status,
                    message));
            return;
        }
        JsonNode params;
        try {
            if (body.overflowed()) {
                throw new IOException("answer larger than " + LIMIT + " bytes");
            }
            JsonNode doc = JSON.readTree(bytes);
            params = doc == null ? null : doc.get("kv_transfer_params");
            if (params == null || !params.isObject()) {
                throw new IOException("no kv_transfer_params in the prefill's answer (is the worker running with "
                        + "--kv-transfer-config and kv_role kv_producer or kv_both?)");
            }
            if (ex.wantsPromptTokens()) {
                ex.reportPromptTokens(PromptTokens.of(doc, "prompt_tokens"));
            }
        } catch (IOException e) {
            countFailure("malformed", "");
            at.failed(AttemptFailure.malformed(ApiError.malformed("prefill", w.name(), e.getMessage()), w));
            return;
        }
        ex.pd.health().success(w);
        ex.prefillFinished(at);
        if (!ex.request.stream()) {
            ex.firstToken(); // as in SGLang mode: a whole answer's first-token moment is the prefill's end
        }
        vllm.prefillAnswered((ObjectNode) params);
        ex.halfEnded();
    }

    @Override
    public void onFailure(UpstreamFailure failure) {
        if (done()) {
            return;
        }
        at.failed(connectionFailed(failure));
        ex.halfEnded();
    }
}
