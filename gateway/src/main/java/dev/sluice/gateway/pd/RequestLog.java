package dev.sluice.gateway.pd;

import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.config.RequestLogging;
import dev.sluice.gateway.logging.LogThrottle;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.tracing.RequestTrace;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What is written down when a request ends: its metrics, the recent-errors entry for a failure,
 * and its one log line. Everything it needs is passed in as values, so a reload between the
 * request's start and its end cannot change (or break) what is recorded.
 */
final class RequestLog {
    private static final Logger log = LoggerFactory.getLogger(RequestLog.class);
    /** Lines per second for requests that ended rejected or invalid (all of them counted in metrics). */
    static final int CLIENT_CAUSED_LINES_PER_SECOND = 50;
    private static final LogThrottle CLIENT_CAUSED_LINES = new LogThrottle(CLIENT_CAUSED_LINES_PER_SECOND);

    /** The request's facts at its end ({@code "-"} for what it never had). */
    record Facts(String rid, String route, String prefill, String decode, int attempts, boolean stream, int batch,
                 String tokens, String priority, String tenant, String queuedMs, int status, Outcome outcome,
                 long ttftMs, long durationMs, String detail, RequestTrace trace, int sequences) {
    }

    /** Stack traces of the gateway's own failures per second (all of them counted). */
    private static final LogThrottle INTERNAL_ERROR_LINES = new LogThrottle(10);

    private RequestLog() {
    }

    /**
     * The gateway's own code failed while handling request {@code rid} (attempt {@code a}, or null):
     * counted, and logged once with its stack trace; never counted against a worker.
     */
    static void internalError(GatewayMetrics metrics, String rid, AttemptKey a, Throwable error) {
        metrics.internalError("request");
        long suppressed = INTERNAL_ERROR_LINES.tryAcquire(System.nanoTime());
        if (suppressed >= 0) {
            log.error("internal error rid={} prefill={} decode={} suppressed_before={}", rid,
                    a == null ? "-" : a.prefill().name(), a == null ? "-" : a.decode().name(), suppressed, error);
        }
    }

    /** The facts of a request that ended ({@code ticket} null: it was never admitted; {@code a} null: never sent). */
    static Facts facts(String rid, GenerationRequest request, Attempt a, int attempts, Ticket ticket, String priority,
                       int status, Outcome outcome, ExchangeTimeline timeline, String detail, RequestTrace trace) {
        boolean admitted = ticket != null;
        return new Facts(rid, request.route().label(), a == null ? "-" : a.prefill.name(),
                a == null ? "-" : a.decode.name(), attempts, request.stream(), request.batchSize(),
                admitted ? String.valueOf(ticket.tokens()) : "-", admitted ? priority : "-",
                admitted ? ticket.tenant() : "-",
                admitted && a != null ? String.valueOf(TimeUnit.NANOSECONDS.toMillis(ticket.queuedNanos())) : "-",
                status, outcome, timeline.ttftMillis(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - timeline.receivedNanos()), detail, trace,
                Math.max(1, request.batchSize()) * request.parallelSamples());
    }

    static void write(Facts f, PdServices services, RequestLogging logging, long completionTokens, String tenant) {
        if (completionTokens > 0) {
            services.metrics().completionTokens(completionTokens);
            if (tenant != null) {
                services.admission().completionTokens(tenant, completionTokens); // its tenant's token rate
            }
        }
        if (f.outcome() != Outcome.OK) {
            services.recentErrors().add(new RecentErrors.Entry(Instant.now(), f.rid(), f.route(), f.status(),
                    f.outcome().label(), f.detail()));
        }
        services.metrics().requestEnded(f.route(), f.outcome(), Duration.ofMillis(f.durationMs()));
        if (f.outcome() == Outcome.OK) {
            services.metrics().genAi().timePerOutputToken(f.route(), f.durationMs(), f.ttftMs(), completionTokens,
                    f.sequences());
        }
        if (!logging.logs(f.outcome() == Outcome.OK)) {
            return; // logging.requests: counted in the metrics above, no line
        }
        if (f.outcome() == Outcome.REJECTED || f.outcome() == Outcome.BAD_REQUEST) {
            // a client can cause these at will: a flood costs counters, not a log line each
            long suppressed = CLIENT_CAUSED_LINES.tryAcquire(System.nanoTime());
            if (suppressed < 0) {
                return;
            }
            if (suppressed > 0) {
                log.info("request log: {} lines of rejected or invalid requests suppressed (at most {} a second; "
                        + "sluice_requests_total counts every one)", suppressed, CLIENT_CAUSED_LINES_PER_SECOND);
            }
        }
        log.info("request rid={} route={} prefill={} decode={} attempts={} stream={} batch={} tokens={} priority={} "
                        + "tenant={} queued_ms={} status={} outcome={} ttft_ms={} duration_ms={}{}{}", f.rid(), f.route(),
                f.prefill(), f.decode(), f.attempts(), f.stream(), f.batch(), f.tokens(), f.priority(), f.tenant(),
                f.queuedMs(), f.status(), f.outcome().label(), f.ttftMs() < 0 ? "-" : f.ttftMs(), f.durationMs(),
                f.trace().logIds(), f.detail().isEmpty() ? "" : " detail=\"" + f.detail() + "\"");
    }
}
