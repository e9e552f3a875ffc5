package dev.sluice.gateway.pd;

/**
 * The events of a request the gateway sends for itself (a stall probe, a calibration of a prefill rate):
 * no client reads its bytes, so what a client's exchange does with chunks, post-commit failures, parts
 * and completion counts is nothing here. Subclasses decide on the prefill, the first token, the end
 * and the failures.
 */
abstract class GatewayOwnRequest implements AttemptEvents {
    @Override
    public void relayed(AttemptKey a) {
    }

    @Override
    public void failedAfterCommit(AttemptKey a, AttemptFailure f) {
    }

    @Override
    public void partEnded(AttemptKey a) {
    }

    @Override
    public void completionTokens(long tokens) {
    }
}
