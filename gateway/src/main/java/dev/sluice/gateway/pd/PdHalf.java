package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.upstream.UpstreamListener;
import io.netty.util.concurrent.Future;

/**
 * What the prefill and decode halves of an attempt share: ending exactly once (giving the
 * worker's in-flight slot back), being stopped with an abort to a worker that may hold the
 * request, and turning a connection-level failure into a classified {@link AttemptFailure}.
 */
abstract class PdHalf implements UpstreamListener {
    final Attempt at;
    final PdExchange ex;
    private boolean done;

    PdHalf(Attempt at) {
        this.at = at;
        this.ex = at.ex;
    }

    abstract Worker worker();

    abstract UpstreamCall call();

    final boolean done() {
        return done;
    }

    final void markDone() {
        done = true;
        worker().released();
    }

    /**
     * Stops this half if it is still running; {@code always}: abort a finished one too. Returns
     * when the worker has acknowledged the abort (already done if none was needed), or null if
     * this half had already ended and nothing was sent.
     */
    final Future<Void> stop(boolean always) {
        boolean sent = call().sent();
        if (done) {
            return always && sent ? at.sendAbort(worker()) : null;
        }
        markDone();
        call().cancel();
        return sent ? at.sendAbort(worker()) : ex.ctx.executor().newSucceededFuture(null);
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

    final void countFailure(String kind, String message) {
        ex.pd.metrics().upstreamError(worker().role().label(), kind);
        if (WorkerErrorBody.isKvTransferFailure(message)) {
            ex.pd.metrics().kvTransferFailure(worker().name());
        }
    }
}
