package dev.sluice.gateway.pd;

import dev.sluice.gateway.tracing.RequestTrace;

/**
 * The exchange's {@link AttemptEvents}, traced: what an attempt reports starts and ends the spans of
 * its calls in the request's {@link RequestTrace}, then goes on to the exchange unchanged. The
 * request core has no span calls of its own; this decorator and the worker calls' traceparent are
 * where tracing meets it. Event-loop confined.
 */
final class TracedEvents implements AttemptEvents {
    private final AttemptEvents exchange;
    private final RequestTrace trace;
    private final long receivedNanos;

    TracedEvents(AttemptEvents exchange, RequestTrace trace, long receivedNanos) {
        this.exchange = exchange;
        this.trace = trace;
        this.receivedNanos = receivedNanos;
    }

    @Override
    public void prefillSucceeded(AttemptKey a) {
        trace.prefillDone(a);
        boolean first = !exchange.pastFirstToken(a);
        trace.exemplarOn(); // the first-token latency recorded here carries the trace's id
        try {
            exchange.prefillSucceeded(a); // a non-streamed request's first-token moment is its prefill's end
        } finally {
            trace.exemplarOff();
        }
        if (first && exchange.pastFirstToken(a)) {
            trace.firstToken(a, System.nanoTime() - receivedNanos);
        }
    }

    @Override
    public void firstToken(AttemptKey a) {
        boolean first = !exchange.pastFirstToken(a);
        trace.exemplarOn();
        try {
            exchange.firstToken(a);
        } finally {
            trace.exemplarOff();
        }
        if (first && exchange.pastFirstToken(a)) {
            trace.firstToken(a, System.nanoTime() - receivedNanos);
        }
    }

    @Override
    public void relayed(AttemptKey a) {
        exchange.relayed(a);
    }

    @Override
    public void responseEnded(AttemptKey a, boolean clean) {
        trace.responseEnded(a, clean);
        exchange.responseEnded(a, clean);
    }

    @Override
    public void failed(AttemptKey a, AttemptFailure f) {
        trace.failed(a, f.error().code(), f.error().message(), f.culprit() == null ? null : f.culprit().name());
        exchange.failed(a, f);
    }

    @Override
    public void failedAfterCommit(AttemptKey a, AttemptFailure f) {
        trace.failed(a, f.error().code(), f.error().message(), f.culprit() == null ? null : f.culprit().name());
        exchange.failedAfterCommit(a, f);
    }

    @Override
    public void partEnded(AttemptKey a) {
        exchange.partEnded(a);
    }

    @Override
    public void internalError(AttemptKey a, Throwable error) {
        trace.failed(a, "internal_error", String.valueOf(error), null);
        exchange.internalError(a, error);
    }

    @Override
    public boolean wantsPromptTokens() {
        return exchange.wantsPromptTokens();
    }

    @Override
    public void promptTokens(long tokens) {
        trace.inputTokens(tokens);
        exchange.promptTokens(tokens);
    }

    @Override
    public void completionTokens(long tokens) {
        exchange.completionTokens(tokens);
    }

    @Override
    public void finishReasons(java.util.List<String> reasons) {
        trace.finishReasons(reasons);
    }

    @Override
    public boolean pastFirstToken(AttemptKey a) {
        return exchange.pastFirstToken(a);
    }
}
