package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.upstream.UpstreamFailure;
import org.junit.jupiter.api.Test;

/** Each way an attempt fails, classified: whom it blames, as what, and whether another pair may try. */
class AttemptFailureTest {
    private final Worker w = AttemptHarness.worker(WorkerRole.DECODE, AttemptHarness.NOWHERE, null);

    private AttemptFailure status(int status, String message) {
        return AttemptFailure.fromStatus(ApiError.fromWorker(status, "decode", w.name(), message), w, status, message);
    }

    private static void is(AttemptFailure f, Worker culprit, FailureKind kind, RetryReason reason) {
        assertThat(f.culprit()).as("culprit").isSameAs(culprit);
        assertThat(f.kind()).as("kind").isEqualTo(kind);
        assertThat(f.retryReason()).as("retry reason").isEqualTo(reason);
    }

    @Test
    void aClients4xxBlamesNobodyAndIsNotRetried() {
        is(status(400, "context length exceeded"), null, null, null);
        is(status(422, "bad field"), null, null, null);
        is(status(404, "no such route"), null, null, null);
    }

    @Test
    void a429IsABusyWorkerNotASickOne() {
        is(status(429, "Too many requests"), w, null, RetryReason.WORKER_BUSY);
    }

    @Test
    void a503ForAFullQueueIsLoadAndAnyOther503IsAFault() {
        is(status(503, "The request queue is full."), w, null, RetryReason.WORKER_BUSY);
        is(status(503, "Service Unavailable"), w, FailureKind.SERVER_ERROR, RetryReason.WORKER_BUSY);
    }

    @Test
    void a500IsAFaultNotRetriedUnlessItIsAKvTransferFailure() {
        is(status(500, "Internal Server Error"), w, FailureKind.SERVER_ERROR, null);
        is(status(500, "Decode transfer failed for request abc"), w, FailureKind.KV_TRANSFER, RetryReason.KV_TRANSFER);
        is(status(500, "NIXL KVReceiver Exception"), w, FailureKind.KV_TRANSFER, RetryReason.KV_TRANSFER);
    }

    @Test
    void aCodeLessErrorEventIsTheClients400() {
        AttemptFailure f = AttemptFailure.fromScan(new FailureScan.Found(400, "context length", false), w, "decode");
        is(f, null, null, null);
        assertThat(f.error().status().code()).isEqualTo(400);
    }

    @Test
    void anAbortWithoutStatusBlamesNobodyAndMayBeRetried() {
        AttemptFailure f = AttemptFailure.fromScan(new FailureScan.Found(0, "Abort in waiting queue", true), w,
                "decode");
        is(f, null, null, RetryReason.WORKER_ABORTED);
        assertThat(f.error().status().code()).isEqualTo(502);
    }

    @Test
    void anAbortWithoutStatusButAKvTextIsAKvFailure() {
        AttemptFailure f = AttemptFailure.fromScan(new FailureScan.Found(0, "KVTransferError(bootstrap_room=1)", true),
                w, "decode");
        is(f, w, FailureKind.KV_TRANSFER, RetryReason.KV_TRANSFER);
        assertThat(f.error().status().code()).isEqualTo(500);
    }

    @Test
    void anAbortWithAStatusIsJudgedByIt() {
        is(AttemptFailure.fromScan(new FailureScan.Found(503, "The request queue is full.", true), w, "decode"), w,
                null, RetryReason.WORKER_BUSY);
        is(AttemptFailure.fromScan(new FailureScan.Found(500, "boom", true), w, "decode"), w,
                FailureKind.SERVER_ERROR, null);
    }

    @Test
    void connectionFailures() {
        ApiError e = ApiError.unreachable("decode", w.name(), "x");
        is(AttemptFailure.fromConnection(e, w, new UpstreamFailure(UpstreamFailure.Kind.CONNECT, "refused")), w,
                FailureKind.CONNECT, RetryReason.CONNECT);
        // the keep-alive race: the worker closed an idle connection as we sent; it never saw the request
        is(AttemptFailure.fromConnection(e, w, new UpstreamFailure(UpstreamFailure.Kind.RESET, "closed", true)), null,
                null, RetryReason.STALE_CONNECTION);
        // a reset mid-answer: the worker may have done the work, so no retry
        is(AttemptFailure.fromConnection(e, w, new UpstreamFailure(UpstreamFailure.Kind.RESET, "reset", false)), w,
                FailureKind.SERVER_ERROR, null);
        is(AttemptFailure.fromConnection(e, w, new UpstreamFailure(UpstreamFailure.Kind.MALFORMED, "bad", false)), w,
                FailureKind.SERVER_ERROR, null);
    }

    @Test
    void aStallBlamesItsCulpritWhenKnownAndNobodyYetOtherwise() {
        is(AttemptFailure.stall(ApiError.internal("stall"), w), w, FailureKind.STALL, RetryReason.STALL);
        is(AttemptFailure.stall(ApiError.internal("stall"), null), null, null, RetryReason.STALL);
    }

    @Test
    void malformedEjectedAndDeadline() {
        is(AttemptFailure.malformed(ApiError.internal("m"), w), w, FailureKind.SERVER_ERROR, null);
        is(AttemptFailure.ejected(w), null, null, RetryReason.WORKER_EJECTED);
        is(AttemptFailure.deadline(ApiError.internal("d"), w, FailureKind.TIMEOUT), w, FailureKind.TIMEOUT, null);
    }
}
