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

    @Override
    void admit(Exchange ex) {
        for (SimItem item : ex.items) {
            scheduler.enqueue(item);
        }
    }
}
