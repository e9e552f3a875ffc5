package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.routing.Worker;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.EventLoop;

/**
 * One of the gateway's own generation requests that time a prefill worker ({@link PrefillCalibration}):
 * sent through the configured protocol's driver exactly as a client's attempt goes (SGLang bootstrap
 * rooms, vLLM {@code kv_transfer_params}, or one unified worker), with nobody to answer (the
 * {@link ProbeSink} keeps the status only). Like the stall probe it is no client's request: no admission
 * ticket, no retry, no request metrics, no health report.
 *
 * <p>It measures from the send to the prefill's end as the exchange sees it for a client (the prefill
 * half's answer in PD; on a unified worker the whole one-token answer, which is its prefill and one
 * step), and takes the prompt's size from the
 * worker's own count: the decode's {@code usage.prompt_tokens} in SGLang PD, the prefill leg's in vLLM
 * (both count the tokenized prompt: SGLang's {@code UsageProcessor.calculate_response_usage} sums
 * {@code meta_info["prompt_tokens"]}, sgl-project/sglang@9e738dbafab35954e694d4f038a29ea48923ff6e
 * python/sglang/srt/entrypoints/openai/usage_processor.py; vLLM's completion answer counts
 * {@code prompt_token_ids}, vllm-project/vllm@2d5f987dff069848e428593c21df021d02d4282a
 * vllm/entrypoints/openai/serving_completion.py). Event-loop confined.
 */
final class CalibrationRequest extends GatewayOwnRequest {
    /** What the request came to. */
    interface Done {
        /** Answered 200: the prompt's tokens ({@code -1}: the worker named none) and the send-to-prefill-end time. */
        void answered(long promptTokens, long prefillNanos);

        void failed(String why);
    }

    private final ProbeSink sink = new ProbeSink();
    private final Attempt attempt;
    private final Done done;
    private long sentNanos;
    private long prefillNanos = -1;
    private long promptTokens = -1;
    private boolean ended;

    CalibrationRequest(Drivers drivers, AttemptServices services, EventLoop loop, GenerationRequest request,
                       Worker prefill, Worker decode, Done done) {
        this.done = done;
        RequestScope scope = new RequestScope(request, loop, ByteBufAllocator.DEFAULT, sink, services, this);
        this.attempt = drivers.newAttempt(scope, new AttemptKey(RequestIds.calibration(), prefill, decode));
    }

    String rid() {
        return attempt.rid;
    }

    void send() {
        sentNanos = System.nanoTime();
        if (!attempt.send()) {
            attempt.giveUp();
            end(null, "the calibration's worker request could not be built");
        }
    }

    /** Gives up (a timeout, the gateway closing): both halves are stopped as for a client that left. */
    void stop() {
        ended = true;
        if (!attempt.givenUp()) {
            attempt.giveUp();
            attempt.stop(AbortCause.CALIBRATION);
        }
        sink.abandon();
    }

    private void end(Boolean ok, String why) {
        if (ended) {
            return;
        }
        ended = true;
        if (Boolean.TRUE.equals(ok)) {
            done.answered(promptTokens, prefillNanos);
        } else {
            done.failed(why);
        }
    }

    private void prefillEnded() {
        if (prefillNanos < 0) {
            prefillNanos = System.nanoTime() - sentNanos;
        }
    }

    // ---- what the attempt reports ----

    @Override
    public void prefillSucceeded(AttemptKey a) {
        prefillEnded();
    }

    @Override
    public void firstToken(AttemptKey a) {
        prefillEnded(); // a unified worker's prefill ends at its first token, as for a client's request
    }

    @Override
    public void responseEnded(AttemptKey a, boolean clean) {
        if (clean && sink.status() == 200) {
            prefillEnded(); // a unified worker's non-streamed answer reports no first token: its end is it (one token)
            end(true, null);
        } else {
            end(false, "answered status " + sink.status() + (clean ? "" : " with an error in it"));
        }
    }

    @Override
    public void failed(AttemptKey a, AttemptFailure f) {
        end(false, f.error().message());
        stop();
    }

    @Override
    public void internalError(AttemptKey a, Throwable error) {
        RequestLog.internalError(attempt.scope.services().metrics(), attempt.rid, a, error);
        end(false, "the gateway failed while handling the calibration (an internal error, logged)");
        stop();
    }

    @Override
    public boolean wantsPromptTokens() {
        return true;
    }

    @Override
    public void promptTokens(long tokens) {
        if (tokens > 0) {
            promptTokens = tokens;
        }
    }

    @Override
    public boolean pastFirstToken(AttemptKey a) {
        return prefillNanos >= 0;
    }
}
