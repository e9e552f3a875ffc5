package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.upstream.UpstreamListener;
import io.netty.util.concurrent.Future;

/**
 * What the prefill and decode halves of an exchange share: ending exactly once (giving the
 * worker's in-flight slot back), being stopped with an abort to a worker that may hold the
 * request, and turning a connection-level failure into an error with the right status.
 */
abstract class PdHalf implements UpstreamListener {
    final PdExchange ex;
    private boolean done;

    PdHalf(PdExchange ex) {
        this.ex = ex;
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
            return always && sent ? ex.sendAbort(worker()) : null;
        }
        markDone();
        call().cancel();
        return sent ? ex.sendAbort(worker()) : ex.ctx.executor().newSucceededFuture(null);
    }

    /**
     * The connection failed before the response completed: a connect failure takes the worker out
     * of rotation (nothing reached it); otherwise it may still hold the request and is told to abort.
     */
    final ApiError connectionFailed(UpstreamFailure failure) {
        markDone();
        Worker w = worker();
        if (failure.kind() == UpstreamFailure.Kind.CONNECT) {
            w.markUsable(false);
        } else {
            ex.sendAbort(w);
        }
        countFailure(failure.label(), "");
        String role = w.role().label();
        return failure.kind() == UpstreamFailure.Kind.MALFORMED
                ? ApiError.malformed(role, w.name(), failure.detail())
                : ApiError.unreachable(role, w.name(), failure.label() + ": " + failure.detail());
    }

    final void countFailure(String kind, String message) {
        ex.pd.metrics().upstreamError(worker().role().label(), kind);
        if (WorkerErrorBody.isKvTransferFailure(message)) {
            ex.pd.metrics().kvTransferFailure(worker().name());
        }
    }
}
