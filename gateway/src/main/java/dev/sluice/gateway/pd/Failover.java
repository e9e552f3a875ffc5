package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.tracing.RequestTrace;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an exchange does with a failed attempt: another pair when the failure is safe to retry
 * ({@link AttemptFailure#retryReason()}) and time, tries and a ready pair are left, after the
 * back-off of {@link RetryPlan} (the failed workers avoided); else the client is answered at once.
 * Only the decision and the retry's timer live here; the exchange keeps the request's state.
 * Event-loop confined, like its exchange.
 */
final class Failover {
    private static final Logger log = LoggerFactory.getLogger(PdExchange.class); // the exchange's own lines

    /** What the failover asks of its exchange. */
    interface Host {
        /** Answers the client with {@code error} and stops the current attempt ({@code cause}; null: nothing runs). */
        void fail(ApiError error, AbortCause cause);

        /** The request has ended, or its client has left: a waiting retry does nothing. */
        boolean over();

        /** The request waits for a pair again (queue updates restart their clock). */
        void waitsAgain();
    }

    private final AttemptSequence attempts;
    private final ExchangeTicket ticket;
    private final ExchangeTimeline timeline;
    private final ClientSink client;
    private final WorkerSet workers;
    private final GatewayMetrics metrics;
    private final long requestTimeoutNanos;
    private final String rid;
    private final Host host;
    private final RequestTrace trace;

    Failover(AttemptSequence attempts, ExchangeTicket ticket, ExchangeTimeline timeline, ClientSink client,
             WorkerSet workers, GatewayMetrics metrics, long requestTimeoutNanos, String rid, Host host,
             RequestTrace trace) {
        this.attempts = attempts;
        this.ticket = ticket;
        this.timeline = timeline;
        this.client = client;
        this.workers = workers;
        this.metrics = metrics;
        this.requestTimeoutNanos = requestTimeoutNanos;
        this.rid = rid;
        this.host = host;
        this.trace = trace;
    }

    /** The current attempt {@code a} failed with {@code f}: retry it on another pair, or fail the request. */
    void failed(Attempt a, AttemptFailure f) {
        RetryReason reason = f.retryReason();
        AbortCause cause = reason == null ? AbortCause.PEER_FAILED : reason.abortCause();
        long backoff = ticket.deadlineNanos() < 0 ? -1 : attempts.retry().backoffNanos(attempts.count() - 1,
                Math.min(ticket.deadlineNanos(), timeline.receivedNanos() + requestTimeoutNanos));
        if (reason == null || backoff < 0 || client.committed() || client.ended() || !workers.ready()) {
            // not safe, no attempt or time left, or no pair to go to: answer now rather than wait
            host.fail(f.error(), cause);
            return;
        }
        trace.retrying(a.key, reason.label(), backoff);
        attempts.stopCurrent(cause);
        timeline.attemptEnded();
        metrics.retry(reason.label());
        log.info("retry rid={} attempt={} reason={} failed_prefill={} failed_decode={} backoff_ms={} detail=\"{}\"",
                rid, attempts.count(), reason.label(), a.prefill.name(), a.decode.name(), backoff / 1_000_000,
                f.error().message());
        List<Worker> avoid = RetryPlan.avoid(f, a.prefill, a.decode);
        attempts.retry().schedule(backoff, () -> {
            if (host.over()) {
                return;
            }
            host.waitsAgain();
            if (!ticket.requeue(avoid)) {
                host.fail(f.error(), null);
            }
        });
    }

    /**
     * {@code w} is gone from under the current attempt {@code a}: ejected, or {@code removed} by the
     * operator. Before the client's first byte: the failure to fail over with at once (instead of at the
     * deadline). Streaming from a removed worker: both halves stopped here. Otherwise, or when {@code w}
     * has no part left in {@code a}: null.
     */
    AttemptFailure workerLost(Attempt a, Worker w, boolean removed) {
        if (!(w == a.decode || (w == a.prefill && !a.prefillDone()))) {
            return null;
        }
        if (!client.committed()) {
            return AttemptFailure.ejected(w);
        }
        if (removed) {
            host.fail(ApiError.rejected(HttpResponseStatus.SERVICE_UNAVAILABLE, "worker_removed",
                    "the worker serving this request was removed by the operator", 1), AbortCause.WORKER_REMOVED);
        }
        return null;
    }
}
