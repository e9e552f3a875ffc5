package dev.sluice.testbed.sim;

import io.netty.channel.EventLoop;

/**
 * A simulated SGLang server without disaggregation ({@code disaggregation: none} behind a gateway):
 * {@code /generate}, {@code /v1/chat/completions} and {@code /v1/completions} are prefilled (FCFS,
 * prefix cache) and then decoded here, streamed like a decode's; {@code /abort_request}, SGLang's
 * metrics ({@code engine_type="unified"}) and info routes as on the PD roles. A body that carries
 * a disaggregation field ({@code bootstrap_host}, {@code bootstrap_port}, {@code bootstrap_room},
 * {@code kv_transfer_params}) is refused with 400: a real server would ignore it, but here it means
 * a gateway leaked PD fields to a plain server, which a test should see.
 */
public final class UnifiedServer extends EngineServer {

    UnifiedServer(SimConfig cfg, int ordinal, EventLoop loop) {
        super(cfg, ordinal, loop);
    }

    @Override
    public boolean isPrefill() {
        return false;
    }

    @Override
    public String role() {
        return "unified";
    }

    /** SGLang reports {@code "disaggregation_mode": "null"} when it is off. */
    @Override
    String disaggregationMode() {
        return "null";
    }

    @Override
    void validate(GenerationRequest request) throws GenerationRequest.BadRequest {
        if (!request.pdFields().isEmpty()) {
            throw new GenerationRequest.BadRequest(request.pdFields() + " in the body of a server without "
                    + "disaggregation (fields of a PD gateway must not reach it); rid=" + request.rid());
        }
    }

    /**
     * {@code --max-queued-requests} ({@code maxQueuedRequests}): an item that would make the waiting
     * queue longer than the limit is aborted with 503 "The request queue is full."
     * (sgl-project/sglang@d51c1c21d1ac07cd5d1de9ead6c99087d8428e79 python/sglang/srt/managers/scheduler.py
     * Scheduler._abort_on_queued_limit, called from _add_request_to_queue only when
     * {@code disaggregation_mode == NULL}: the PD roles never check it). The whole request fails with it.
     */
    @Override
    void admit(Exchange ex) {
        int limit = cfg.maxQueuedRequests();
        for (SimItem item : ex.items) {
            if (limit > 0 && scheduler.queued() + 1 > limit) {
                ex.fail(503, "ServiceUnavailableError", "The request queue is full.");
                return;
            }
            scheduler.enqueue(item);
        }
    }
}
