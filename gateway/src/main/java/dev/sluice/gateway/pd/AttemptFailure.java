package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamFailure;

/**
 * Why one attempt at a request failed, classified once for everyone outside the protocol driver:
 * what the client is told if it is not retried, which worker it counts against in health (and as
 * what: a client's 4xx never counts), and whether it is safe to retry on another pair.
 *
 * @param culprit     the worker at fault, or null when none is (a keep-alive race, a 4xx)
 * @param kind        what it counts as in health; null: counts as nothing
 * @param retryReason the bounded {@code reason} label of {@code sluice_retries_total} when a retry is
 *                    safe (before any byte reached the client, which the caller checks), else null
 */
record AttemptFailure(ApiError error, Worker culprit, FailureKind kind, String retryReason) {

    /** A worker answered an error status (or an error event) with {@code message}. */
    static AttemptFailure fromStatus(ApiError error, Worker worker, int status, String message) {
        boolean kv = WorkerErrorBody.isKvTransferFailure(message);
        if (kv) {
            return new AttemptFailure(error, worker, FailureKind.KV_TRANSFER, "kv_transfer");
        }
        if (status == 429 || status == 503) {
            // the worker is busy or going away: another pair may take it; a 503 is also a worker fault
            return new AttemptFailure(error, worker, status == 503 ? FailureKind.SERVER_ERROR : null, "worker_busy");
        }
        if (status >= 500) {
            return new AttemptFailure(error, worker, FailureKind.SERVER_ERROR, null);
        }
        return new AttemptFailure(error, null, null, null); // the client's request: not the worker's fault
    }

    /** The connection failed before the response completed. */
    static AttemptFailure fromConnection(ApiError error, Worker worker, UpstreamFailure failure) {
        if (failure.kind() == UpstreamFailure.Kind.CONNECT) {
            return new AttemptFailure(error, worker, FailureKind.CONNECT, "connect");
        }
        if (failure.reusedConnectionClosed()) {
            // the keep-alive race: the worker closed an idle connection as we sent; not a fault, safe to resend
            return new AttemptFailure(error, null, null, "stale_connection");
        }
        return new AttemptFailure(error, worker, FailureKind.SERVER_ERROR, null);
    }

    /** A malformed answer: the worker's fault, not retried (it may have done the work). */
    static AttemptFailure malformed(ApiError error, Worker worker) {
        return new AttemptFailure(error, worker, FailureKind.SERVER_ERROR, null);
    }
}
