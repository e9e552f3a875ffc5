package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamFailure;
import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * Why one attempt at a request failed, classified once for everyone outside the protocol driver:
 * what the client is told if it is not retried, which worker it counts against in health (and as
 * what: a client's 4xx never counts), and whether it is safe to retry on another pair.
 *
 * @param culprit     the worker at fault, or null when none is (a keep-alive race, a 4xx)
 * @param kind        what it counts as in health; null: counts as nothing
 * @param retryReason why a retry is safe (before any byte reached the client, which the caller checks),
 *                    or null when it is not
 */
record AttemptFailure(ApiError error, Worker culprit, FailureKind kind, RetryReason retryReason) {

    /** A worker answered an error status (or an error event) with {@code message}. */
    static AttemptFailure fromStatus(ApiError error, Worker worker, int status, String message) {
        boolean kv = WorkerErrorBody.isKvTransferFailure(message);
        if (kv) {
            return new AttemptFailure(error, worker, FailureKind.KV_TRANSFER, RetryReason.KV_TRANSFER);
        }
        if (status == 429 || status == 503) {
            // the worker is busy or going away: another pair may take it. A 503 is a worker fault unless the
            // worker says its queue is full (SGLang's --max-queued-requests): that is load, not sickness
            boolean fault = status == 503 && !WorkerErrorBody.isQueueFull(message);
            return new AttemptFailure(error, worker, fault ? FailureKind.SERVER_ERROR : null, RetryReason.WORKER_BUSY);
        }
        if (status >= 500) {
            return new AttemptFailure(error, worker, FailureKind.SERVER_ERROR, null);
        }
        return new AttemptFailure(error, null, null, null); // the client's request: not the worker's fault
    }

    /**
     * A failure the worker reported inside a 2xx answer ({@link FailureScan}): an error event is judged
     * by its status like an error answer (a code-less one is the client's 400); an abort finish with a
     * status likewise; an abort without one (someone aborted it on the worker, not this gateway) blames
     * nobody and may be retried on another pair.
     */
    static AttemptFailure fromScan(FailureScan.Found found, Worker worker, String role) {
        if (found.status() == 0 && !WorkerErrorBody.isKvTransferFailure(found.message())) {
            return new AttemptFailure(ApiError.fromWorker(502, role, worker.name(), found.message()), null, null,
                    RetryReason.WORKER_ABORTED);
        }
        int status = found.status() == 0 ? 500 : found.status();
        return fromStatus(ApiError.fromWorker(status, role, worker.name(), found.message()), worker, status,
                found.message());
    }

    /** The connection failed before the response completed. */
    static AttemptFailure fromConnection(ApiError error, Worker worker, UpstreamFailure failure) {
        if (failure.kind() == UpstreamFailure.Kind.CONNECT) {
            return new AttemptFailure(error, worker, FailureKind.CONNECT, RetryReason.CONNECT);
        }
        if (failure.reusedConnectionClosed()) {
            // the keep-alive race: the worker closed an idle connection as we sent; not a fault, safe to resend
            return new AttemptFailure(error, null, null, RetryReason.STALE_CONNECTION);
        }
        return new AttemptFailure(error, worker, FailureKind.SERVER_ERROR, null);
    }

    /** A malformed answer: the worker's fault, not retried (it may have done the work). */
    static AttemptFailure malformed(ApiError error, Worker worker) {
        return new AttemptFailure(error, worker, FailureKind.SERVER_ERROR, null);
    }

    /** The stall watchdog fired: {@code culprit} when it is known whose stall it is, else nobody yet. */
    static AttemptFailure stall(ApiError error, Worker culprit) {
        return new AttemptFailure(error, culprit, culprit == null ? null : FailureKind.STALL, RetryReason.STALL);
    }

    /** Health took {@code w} out of rotation while the attempt waited on it: safe to retry, blames nobody more. */
    static AttemptFailure ejected(Worker w) {
        return new AttemptFailure(ApiError.rejected(HttpResponseStatus.SERVICE_UNAVAILABLE, "worker_ejected",
                w.role().label() + " worker " + w.name() + " was taken out of rotation while this request waited "
                        + "on it: " + w.status().reason(), 1), null, null, RetryReason.WORKER_EJECTED);
    }

    /** A deadline passed on {@code late}: counted against it, never retried (the client's time is spent). */
    static AttemptFailure deadline(ApiError error, Worker late, FailureKind kind) {
        return new AttemptFailure(error, late, kind, null);
    }
}
