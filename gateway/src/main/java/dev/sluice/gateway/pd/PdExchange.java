package dev.sluice.gateway.pd;

import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.logging.LogThrottle;
import dev.sluice.gateway.routing.PrefixKey;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client request, from admission until its response and every attempt at it have ended. It
 * owns what does not depend on the protocol: the admission ticket, the client's response, the
 * deadlines and the stall watchdog ({@link ExchangeWatchdog}), retries on another pair, and every
 * health outcome of its workers (reported here and nowhere else). Each try on a prefill/decode
 * pair is an {@link Attempt}, which reports through {@link AttemptEvents}. If a half fails, stalls
 * or times out, or the client leaves, both halves are stopped at once; a failure that is safe to
 * retry (nothing reached the client yet, see {@link AttemptFailure}) sends the request, with its
 * one ticket, back to admission for another pair. Lives on the client's event loop; no locks.
 */
public final class PdExchange implements TicketListener, AttemptEvents, ExchangeWatchdog.Guarded {
    private static final Logger log = LoggerFactory.getLogger(PdExchange.class);
    /** Stack traces of the gateway's own failures per second (all of them counted). */
    private static final LogThrottle INTERNAL_ERROR_LINES = new LogThrottle(10);

    private final PdServices services;
    private final ExchangeSettings settings;
    private final GenerationRequest request;
    private final ClientSink client;
    private final EventLoop loop;
    private final RequestScope scope;
    private final String routeLabel;
    private final ExchangeTimeline timeline;
    private final ExchangeWatchdog watchdog;
    private final Runnable onClientDone;
    /** The request's id: the first attempt's rid on the workers, and the id in every log line. */
    private final String rid;

    /** The attempt that speaks for the request now (null before the first grant). */
    private Attempt attempt;
    private final List<Attempt> attempts = new ArrayList<>(1);
    private ScheduledFuture<?> retryTimer;
    /** The decode is paused because the client stopped taking bytes (set and cleared with the pause). */
    private boolean clientBackpressured;
    private boolean clientDoneSignalled;
    private boolean ended;
    private Ticket ticket;
    /** The priority class the request was admitted under (a reload may drop the class while it runs). */
    private String priorityName = "-";
    private PromptText prompt;
    private boolean promptTokensReported;
    private long completionTokens;
    private Outcome outcome = Outcome.OK;
    private String detail = "";

    public PdExchange(PdServices services, ExchangeSettings settings, ChannelHandlerContext ctx,
                      GenerationRequest request, boolean keepAlive, long receivedNanos, Runnable onClientDone) {
        this.services = services;
        this.settings = settings;
        this.request = request;
        this.loop = ctx.channel().eventLoop();
        this.rid = RequestIds.next();
        this.client = new ClientSink(ctx, rid, keepAlive, services.metrics());
        this.routeLabel = request.route().label();
        this.timeline = new ExchangeTimeline(receivedNanos, settings.timeouts(), settings.watchdog(), request.stream());
        this.watchdog = new ExchangeWatchdog(this, settings.timeouts().idleStream());
        this.onClientDone = onClientDone;
        this.scope = new RequestScope(request, loop, ctx.alloc(), client, new AttemptServices(services.pool(),
                services.aborts(), services.metrics(), settings.maxResponseBodyBytes(), settings.timeouts().abort()),
                this);
        services.live().add(this);
    }

    /** The request's id (the first attempt's rid on the workers). */
    public String rid() {
        return rid;
    }

    /** What this request's attempts share (tests and benchmarks build attempts on it). */
    RequestScope scope() {
        return scope;
    }

    /** Makes {@code a} the current attempt without sending it: benchmarks drive its halves directly. */
    void adopt(Attempt a) {
        attempt = a;
        attempts.add(a);
        timeline.attemptStarted(System.nanoTime(), 0, true);
    }

    /**
     * Asks admission control for a pair. The answer comes at once (a rejection, or a grant when
     * there is room) or later from the queue, through {@link #granted} / {@link #rejected}.
     */
    public void admit(PromptText prompt, long tokens, int priority, String tenant, long deadlineNanos) {
        this.prompt = prompt;
        if (ended || client.ended()) {
            return; // the client left while its prompt was being counted
        }
        List<String> classes = services.admission().config().priorities();
        priorityName = priority >= 0 && priority < classes.size() ? classes.get(priority) : "-";
        ticket = new Ticket(rid, tokens, priority, tenant, deadlineNanos, loop, this)
                // rendering the prompt costs up to 64K characters of work on the loop: only for a policy that reads it
                .prefixKey(settings.routingUsesPrefix() ? PrefixKey.of(request.route().label(), request.body()) : "")
                .direct(settings.directDecodeMaxTokens() > 0 && tokens <= settings.directDecodeMaxTokens()
                        && request.batchSize() == 0);
        Rejection r = services.admission().submit(ticket);
        if (r != null) {
            rejected(r);
        }
    }

    @Override
    public void rejected(Rejection r) {
        if (r.reason() == RejectReason.EVICTED) {
            services.metrics().abortCause(AbortCause.EVICTED.label());
        }
        fail(ApiError.rejected(r.reason().status(), r.reason().code(), r.message(), r.retryAfterSeconds()), null);
    }

    @Override
    public void granted(Worker p, Worker d) {
        if (ended || client.ended()) {
            services.admission().release(ticket); // the client left between the grant and now
            maybeEnd();
            return;
        }
        try {
            start(p, d);
        } catch (RuntimeException e) {
            internalError(attempt, e);
        }
    }

    /** Rewrites the body for the granted pair (fresh rid and rooms on a retry) and sends both halves. */
    private void start(Worker p, Worker d) {
        String attemptRid = attempts.isEmpty() ? rid : RequestIds.next();
        Attempt a = settings.drivers().newAttempt(scope, p, d, attemptRid);
        attempt = a;
        attempts.add(a);
        // a probe of a worker suspect of a stall is judged fast, so that service resumes soon after it heals
        boolean probe = p.state() == WorkerState.SUSPECT || d.state() == WorkerState.SUSPECT;
        timeline.attemptStarted(System.nanoTime(), services.admission().expectedPrefillNanos(ticket),
                settings.drivers().disaggregated() || request.stream(),
                probe ? settings.stallPanicProbeTimeout().toNanos() : Long.MAX_VALUE);
        watchdog.arm();
        if (!a.send()) {
            a.giveUp();
            fail(ApiError.internal("cannot build the worker request"), null);
        }
    }

    // ---- what the attempts report (AttemptEvents) ----

    @Override
    public void prefillSucceeded(Attempt a) {
        services.health().success(a.prefill); // a stale attempt's prefill still did its part
        if (a != attempt) {
            return;
        }
        prefillFinished();
        if (!request.stream()) {
            firstToken(a); // a non-streamed request shows no tokens: the prefill's end is its first-token moment
        }
    }

    /** The prefill's work is done: its prompt tokens stop counting against the pending budget. */
    private void prefillFinished() {
        timeline.prefillDone(System.nanoTime());
        if (ticket != null) {
            services.admission().prefillDone(ticket);
        }
        if (!ended && !timeline.pastFirstToken()) {
            watchdog.arm(); // the next deadline is now the decode's first token, sooner than the prefill watchdog's
        }
    }

    @Override
    public void firstToken(Attempt a) {
        if (a != attempt || timeline.pastFirstToken()) {
            return;
        }
        long now = System.nanoTime();
        boolean requestsFirst = timeline.firstToken(now);
        if (a.decode.state() == WorkerState.SUSPECT) {
            services.health().success(a.decode); // a probe's first token is proof enough: no wait for its end
        }
        if (!timeline.prefillSeenDone()) {
            prefillFinished(); // a unified worker's (or direct decode's) prefill ends at its first token
        }
        if (requestsFirst) {
            services.metrics().firstToken(routeLabel, java.time.Duration.ofNanos(now - timeline.receivedNanos()));
        }
    }

    @Override
    public void relayed(Attempt a) {
        long gap = timeline.chunkRelayed(System.nanoTime());
        if (gap > 0) {
            services.metrics().interTokenGap(routeLabel, gap);
        }
        if (!client.writable()) {
            // the client cannot take more: stop reading the decode until it drains
            clientBackpressured = true;
            a.pauseDecode();
        }
    }

    @Override
    public void responseEnded(Attempt a, boolean clean) {
        if (clean) {
            services.health().success(a.decode);
        }
        signalClientDone();
        maybeEnd();
    }

    @Override
    public void failed(Attempt a, AttemptFailure f) {
        countAgainstWorker(f);
        if (ended || a != attempt || a.givenUp()) {
            return; // a stale attempt's late news says something about its worker, nothing more
        }
        RetryReason reason = f.retryReason();
        AbortCause cause = reason == null ? AbortCause.PEER_FAILED : reason.abortCause();
        long backoff = ticket == null ? -1 : RetryPlan.backoffNanos(settings.retries(), attempts.size() - 1,
                System.nanoTime(), Math.min(ticket.deadlineNanos(), timeline.receivedNanos()
                        + settings.timeouts().request().toNanos()));
        if (reason == null || backoff < 0 || client.committed() || client.ended() || !services.workers().ready()) {
            // not safe, no attempt or time left, or no pair to go to: answer now rather than wait
            fail(f.error(), cause);
            return;
        }
        a.giveUp();
        a.stop(cause);
        timeline.attemptEnded();
        services.metrics().retry(reason.label());
        log.info("retry rid={} attempt={} reason={} failed_prefill={} failed_decode={} backoff_ms={} detail=\"{}\"",
                rid, attempts.size(), reason.label(), a.prefill.name(), a.decode.name(), backoff / 1_000_000,
                f.error().message());
        List<Worker> avoid = RetryPlan.avoid(f, a.prefill, a.decode);
        retryTimer = loop.schedule(() -> {
            retryTimer = null;
            if (!ended && !client.ended() && !services.admission().requeue(ticket, avoid)) {
                fail(f.error(), null);
            }
        }, backoff, TimeUnit.NANOSECONDS);
    }

    @Override
    public void failedAfterCommit(Attempt a, AttemptFailure f) {
        countAgainstWorker(f);
    }

    @Override
    public void partEnded(Attempt a) {
        if (client.ended()) {
            maybeEnd();
        }
    }

    @Override
    public void internalError(Attempt a, Throwable error) {
        services.metrics().internalError("request");
        long suppressed = INTERNAL_ERROR_LINES.tryAcquire(System.nanoTime());
        if (suppressed >= 0) {
            // once, with its stack trace: the gateway's own bug, never counted against a worker
            log.error("internal error rid={} prefill={} decode={} suppressed_before={}", rid,
                    a == null ? "-" : a.prefill.name(), a == null ? "-" : a.decode.name(), suppressed, error);
        }
        fail(ApiError.internal("the gateway failed while handling this request (rid " + rid + "); the error is "
                + "logged and counted in sluice_internal_errors_total"), AbortCause.INTERNAL_ERROR);
    }

    @Override
    public boolean wantsPromptTokens() {
        return !promptTokensReported && request.batchSize() == 0;
    }

    @Override
    public void promptTokens(long tokens) {
        if (!promptTokensReported && prompt != null && request.batchSize() == 0 && tokens > 0) {
            promptTokensReported = true;
            services.counter().observe(prompt, tokens);
            services.metrics().promptTokens(tokens);
        }
    }

    @Override
    public void completionTokens(long tokens) {
        completionTokens = Math.max(completionTokens, tokens);
    }

    @Override
    public boolean pastFirstToken(Attempt a) {
        return a == attempt && timeline.pastFirstToken();
    }

    // ---- events from the client and the gateway ----

    public void clientWritabilityChanged(boolean writable) {
        if (writable && attempt != null) {
            if (clientBackpressured) {
                // the client made progress: the idle clock restarts (the worker was not idle, it was held)
                clientBackpressured = false;
                timeline.clientResumed(System.nanoTime());
            }
            attempt.resumeDecode();
        }
    }

    /** The client's connection closed: stop everything it started. */
    public void clientGone() {
        if (ended) {
            return;
        }
        client.abandon();
        cancelRetry();
        if (ticket != null && services.admission().release(ticket)) {
            ended(Outcome.CLIENT_DISCONNECT, "client disconnected while queued");
        } else if (attempt != null && !attempt.givenUp() && !attempt.done()) {
            attempt.giveUp();
            attempt.stop(AbortCause.CLIENT_DISCONNECT);
            ended(Outcome.CLIENT_DISCONNECT, "client disconnected");
        } else {
            ended(Outcome.CLIENT_DISCONNECT, "client disconnected between attempts");
        }
        signalClientDone();
        maybeEnd();
    }

    /** The drain grace period is over: stop this request (both halves) and tell the client. Any thread. */
    public void abortOnDrain() {
        loop.execute(() -> fail(ApiError.rejected(HttpResponseStatus.SERVICE_UNAVAILABLE, "draining",
                "the gateway shut down before this request finished", 1), AbortCause.DRAIN));
    }

    /**
     * Health took {@code w} out of rotation. Any thread. A request still waiting on it for its first
     * byte is failed over at once (or answered), instead of waiting out its deadline on a dead worker.
     */
    public void workerEjected(Worker w) {
        loop.execute(() -> {
            Attempt a = attempt;
            if (ended || a == null || a.givenUp() || client.committed()) {
                return;
            }
            if (w == a.decode || (w == a.prefill && !a.prefillDone())) {
                failed(a, AttemptFailure.ejected(ApiError.rejected(HttpResponseStatus.SERVICE_UNAVAILABLE,
                        "worker_ejected", w.role().label() + " worker " + w.name() + " was taken out of rotation "
                                + "while this request waited on it: " + w.status().reason(), 1)));
            }
        });
    }

    // ---- for the watchdog (ExchangeWatchdog.Guarded) ----

    @Override
    public ExchangeTimeline timeline() {
        return timeline;
    }

    @Override
    public EventLoop loop() {
        return loop;
    }

    @Override
    public Attempt attempt() {
        return attempt;
    }

    @Override
    public boolean ended() {
        return ended;
    }

    @Override
    public boolean clientEnded() {
        return client.ended();
    }

    @Override
    public boolean clientBackpressured() {
        return clientBackpressured;
    }

    /** Counts a failure against its worker in health (and nothing else: the request goes on or is handled). */
    @Override
    public void countAgainstWorker(AttemptFailure f) {
        if (f.culprit() != null && f.kind() != null) {
            services.health().failure(f.culprit(), f.kind(), f.error().message());
        }
    }

    @Override
    public void stalled(Worker w, String detail) {
        services.health().suspect(w);
        services.health().stalled(w, detail);
    }

    /**
     * Fails the request: the current attempt stopped (both halves), the client told (a full error
     * response, or a last error event in a started stream). {@code cause} labels the abort metric.
     */
    @Override
    public void fail(ApiError error, AbortCause cause) {
        if (ended) {
            return;
        }
        cancelRetry();
        ended(error.outcome(), error.code() + ": " + error.message());
        if (cause != null && attempt != null && !attempt.givenUp()) {
            attempt.giveUp();
            attempt.stop(cause);
        }
        if (!client.ended()) {
            client.sendError(error);
        }
        signalClientDone();
        maybeEnd();
    }

    /** The request's outcome, once: the first cause of its end is the one it is remembered by. */
    private void ended(Outcome o, String why) {
        if (outcome == Outcome.OK) {
            outcome = o;
            detail = why;
        }
    }

    private void cancelRetry() {
        if (retryTimer != null) {
            retryTimer.cancel(false);
            retryTimer = null;
        }
    }

    private boolean attemptsDone() {
        for (Attempt a : attempts) {
            if (!a.done()) {
                return false;
            }
        }
        return retryTimer == null;
    }

    private void signalClientDone() {
        if (!clientDoneSignalled) {
            clientDoneSignalled = true;
            onClientDone.run();
        }
    }

    private void maybeEnd() {
        if (ended || !client.ended() || !attemptsDone()) {
            return;
        }
        ended = true;
        watchdog.cancel();
        if (ticket != null) {
            services.admission().release(ticket);
        }
        services.live().remove(this);
        long now = System.nanoTime();
        Attempt a = attempt;
        RequestEndRecord.write(new RequestEndRecord.Facts(rid, routeLabel, a == null ? "-" : a.prefill.name(),
                a == null ? "-" : a.decode.name(), attempts.size(), request.stream(), request.batchSize(),
                ticket == null ? "-" : String.valueOf(ticket.tokens()), ticket == null ? "-" : priorityName,
                ticket == null ? "-" : ticket.tenant(),
                ticket == null || a == null ? "-" : String.valueOf(TimeUnit.NANOSECONDS.toMillis(ticket.queuedNanos())),
                client.status(), outcome, timeline.ttftMillis(),
                TimeUnit.NANOSECONDS.toMillis(now - timeline.receivedNanos()), detail), services,
                settings.requestLogging(), completionTokens, ticket == null ? null : ticket.tenant());
    }
}
