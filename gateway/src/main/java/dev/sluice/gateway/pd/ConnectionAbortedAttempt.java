package dev.sluice.gateway.pd;

import dev.sluice.gateway.routing.Worker;
import io.netty.util.concurrent.Future;

/**
 * An attempt whose workers abort a request when its connection closes and have no abort endpoint
 * to call (vLLM; unified servers): stopping it is cancelling its calls, decode first, and it has
 * ended when none of its parts runs any more (no abort ordering to wait for).
 */
abstract class ConnectionAbortedAttempt extends Attempt {
    ConnectionAbortedAttempt(RequestScope scope, AttemptKey key) {
        super(scope, key);
    }

    /** The parts of this attempt that may run on a worker, decode first; null entries are parts not started. */
    abstract PdHalf[] parts();

    @Override
    final boolean running() {
        for (PdHalf h : parts()) {
            if (h != null && !h.done()) {
                return true;
            }
        }
        return false;
    }

    @Override
    final boolean done() {
        return !running();
    }

    @Override
    final void stop(AbortCause cause) {
        if (running()) {
            scope.services().metrics().abortCause(cause.label());
        }
        for (PdHalf h : parts()) {
            if (h != null) {
                h.stop(false);
            }
        }
    }

    /** Nothing to send: the closed connection already told the worker. */
    @Override
    final Future<Void> sendAbort(Worker worker) {
        return scope.loop().newSucceededFuture(null);
    }
}
