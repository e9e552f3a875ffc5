package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.upstream.UpstreamListener;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.util.concurrent.Future;

/**
 * What the prefill and decode halves of an attempt share: the call to their worker, ending exactly
 * once (giving the worker's in-flight slot back), being stopped with an abort to a worker that may
 * hold the request, turning a connection-level failure into a classified {@link AttemptFailure},
 * and turning the gateway's own exception while reading the answer into an internal error, never
 * the worker's fault.
 */
abstract class PdHalf implements UpstreamListener, ReadControl {
    final Attempt at;
    final RequestScope scope;
    private UpstreamCall call;
    private boolean done;

    PdHalf(Attempt at) {
        this.at = at;
        this.scope = at.scope;
    }

    abstract Worker worker();

    /** Sends {@code request} to this half's worker (which counts it in flight until the half ends). */
    final void start(FullHttpRequest request) {
        Worker w = worker();
        w.acquired();
        call = new UpstreamCall(scope.services().pool(), w, this);
        call.start(scope.loop(), request);
    }

    final boolean started() {
        return call != null;
    }

    final boolean done() {
        return done;
    }

    final void markDone() {
        if (!done) {
            done = true;
            worker().released();
        }
    }

    @Override
    public final void pauseReading() {
        if (call != null) {
            call.pauseReading();
        }
    }

    @Override
    public final void resumeReading() {
        if (call != null) {
            call.resumeReading();
        }
    }

    /**
     * Stops this half if it is still running; {@code always}: abort a finished one too. Returns
     * when the worker has acknowledged the abort (already done if none was needed), or null if
     * this half had already ended and nothing was sent.
     */
    final Future<Void> stop(boolean always) {
        boolean sent = call != null && call.sent();
        if (done) {
            return always && sent ? at.sendAbort(worker()) : null;
        }
        markDone();
        if (call != null) {
            call.cancel();
        }
        return sent ? at.sendAbort(worker()) : scope.loop().newSucceededFuture(null);
    }

    /**
     * The connection failed before the response completed. Unless nothing reached the worker (a
     * connect failure) it may still hold the request and is told to abort.
     */
    final AttemptFailure connectionFailed(UpstreamFailure failure) {
        markDone();
        Worker w = worker();
        if (failure.kind() != UpstreamFailure.Kind.CONNECT) {
            at.sendAbort(w);
        }
        countFailure(failure.label(), "");
        String role = w.role().label();
        ApiError error = failure.kind() == UpstreamFailure.Kind.MALFORMED
                ? ApiError.malformed(role, w.name(), failure.detail())
                : ApiError.unreachable(role, w.name(), failure.label() + ": " + failure.detail());
        return AttemptFailure.fromConnection(error, w, failure);
    }

    /**
     * The gateway threw while reading this half's answer (the call already closed the connection):
     * the worker may still hold the request, so it is told to abort; the exchange answers 500.
     */
    @Override
    public final void onListenerError(Throwable error) {
        boolean wasRunning = !done;
        markDone();
        if (wasRunning) {
            at.sendAbort(worker());
        }
        scope.events().internalError(at.key, error);
        scope.events().partEnded(at.key);
    }

    /** Counts an upstream error of this half's role (and a KV transfer failure against its worker). */
    final void countFailure(String kind, String message) {
        scope.services().metrics().upstreamError(worker().role().label(), kind);
        if (WorkerErrorBody.isKvTransferFailure(message)) {
            scope.services().metrics().kvTransferFailure(worker().name());
        }
    }
}
