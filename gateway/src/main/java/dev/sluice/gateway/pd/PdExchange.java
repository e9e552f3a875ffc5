package dev.sluice.gateway.pd;

import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.routing.Worker;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoop;
import dev.sluice.gateway.tracing.RequestTrace;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * One client request, from admission until its response and every attempt at it have ended: the
 * admission ticket, the client's response, deadlines and the stall watchdog ({@link ExchangeWatchdog}),
 * retries on another pair ({@link AttemptSequence}), every health outcome ({@link HealthReports},
 * called from here only). Each try on a pair is an {@link Attempt}, reporting through {@link
 * AttemptEvents}. A half that fails, stalls or times out, or a client that leaves, stops both halves
 * at once; a failure safe to retry ({@link AttemptFailure}) sends the request, with its one ticket,
 * back to admission for another pair ({@link Failover} decides). Lives on the client's event loop; no locks.
 */
public final class PdExchange implements TicketListener, AttemptEvents, ExchangeWatchdog.Guarded, InFlight,
        Failover.Host {
    private final PdServices services;
    private final ExchangeSettings settings;
    private final GenerationRequest request;
    private final ClientSink client;
    private final EventLoop loop;
    private final RequestScope scope;
    private final ExchangeTimeline timeline;
    private final ExchangeWatchdog watchdog;
    private final AttemptSequence attempts;
    private final Failover failover;
    private final HealthReports health;
    private final RequestTokens tokens;
    private QueueUpdates queueUpdates;
    private final Runnable onClientDone;
    private final String rid; // the first attempt's rid on the workers, and the id in every log line
    private final ClientBackpressure backpressure;
    private boolean clientDoneSignalled, ended;
    private final ExchangeTicket ticket;
    private final ExchangeOutcome outcome = new ExchangeOutcome();
    private final RequestTrace trace;

    /** {@code clientHeaders}: a client's traceparent/tracestate there is continued (with tracing on; null: none). */
    public PdExchange(PdServices services, ExchangeSettings settings, ChannelHandlerContext ctx, GenerationRequest request,
                      boolean keepAlive, long receivedNanos, Runnable onClientDone, HttpHeaders clientHeaders) {
        this.services = services;
        this.settings = settings;
        this.request = request;
        this.loop = ctx.channel().eventLoop();
        this.rid = RequestIds.next();
        this.trace = services.tracing().request(clientHeaders, TraceFacts.of(request, rid), receivedNanos);
        this.client = new ChannelClientSink(ctx, rid, keepAlive, services.metrics());
        this.queueUpdates = new QueueUpdates(client, false);
        this.timeline = new ExchangeTimeline(receivedNanos, settings.timeouts(), settings.watchdog(), request.stream());
        this.health = new HealthReports(services.health());
        this.attempts = new AttemptSequence(new RetryScheduler(settings.retries(), loop), rid, trace);
        this.tokens = new RequestTokens(services.counter(), services.metrics(), request.batchSize() > 0);
        this.onClientDone = onClientDone;
        this.ticket = new ExchangeTicket(services.admission(), rid, request, settings, loop, this, trace);
        this.watchdog = new ExchangeWatchdog(this, timeline, client, health, loop, settings.timeouts().idleStream(),
                ticket::decodeWaitingForSlot);
        this.backpressure = new ClientBackpressure(client, attempts, timeline);
        this.failover = new Failover(attempts, ticket, timeline, client, services.workers(), services.metrics(),
                settings.timeouts().request().toNanos(), rid, this, trace);
        this.scope = new RequestScope(request, loop, ctx.alloc(), client, new AttemptServices(services.pool(),
                services.aborts(), services.metrics(), settings.maxResponseBodyBytes(), settings.timeouts().abort()),
                new TracedEvents(this, trace, receivedNanos), trace);
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
        attempts.begin(a);
        timeline.attemptStarted(System.nanoTime(), 0, true);
    }

    /**
     * Asks admission control for a pair. The answer comes at once (a rejection, or a grant when
     * there is room) or later from the queue, through {@link #granted} / {@link #rejected}. With
     * {@code queueUpdates}, a streamed request's client hears where it stands while it waits
     * ({@link QueueUpdates}).
     */
    public void admit(PromptText prompt, long promptTokens, int[] promptIds, int priority, String tenant,
                      long deadlineNanos, boolean wantsUpdates) {
        this.queueUpdates = new QueueUpdates(client, wantsUpdates && request.stream());
        tokens.prompt(prompt);
        if (ended || client.ended()) {
            return; // the client left while its prompt was being counted
        }
        queueUpdates.submitted(System.nanoTime());
        Rejection r = ticket.submit(promptTokens, promptIds, priority, tenant, deadlineNanos,
                queueUpdates.wanted() ? queueUpdates : null);
        if (r != null) {
            rejected(r);
        } else {
            queueUpdates.admitted();
        }
    }

    /** The prompt's token ids for the KV event view (empty when it is off), computed where its tokenizer runs. */
    public CompletableFuture<int[]> promptIds() {
        return settings.promptTokens().ofAsync(request.route().label(), request.body());
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
        queueUpdates.granted(System.nanoTime());
        if (ended || client.ended()) {
            ticket.release(); // the client left between the grant and now
            maybeEnd();
            return;
        }
        try {
            start(p, d);
        } catch (RuntimeException e) {
            Attempt a = attempts.current();
            internalError(a == null ? null : a.key, e);
        }
    }

    /** Rewrites the body for the granted pair (fresh rid and rooms on a retry) and sends both halves. */
    private void start(Worker p, Worker d) {
        Attempt a = settings.drivers().newAttempt(scope, attempts.nextKey(p, d, ticket.ranks()));
        attempts.begin(a);
        services.servedModel().seen(request); // the gateway's own stall probes name the model clients ask for
        timeline.attemptStarted(System.nanoTime(), ticket.expectedPrefillNanos(), settings.prefillEndSeen(request.stream()));
        watchdog.arm();
        if (!a.send()) {
            a.giveUp();
            fail(ApiError.internal("cannot build the worker request"), null);
        }
    }

    // ---- what the attempts report (AttemptEvents) ----

    @Override
    public void prefillSucceeded(AttemptKey a) {
        health.prefillSucceeded(a); // a stale attempt's prefill still did its part
        if (!attempts.isCurrent(a)) {
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
        ticket.prefillDone();
        if (!ended && !timeline.pastFirstToken()) {
            watchdog.arm(); // the next deadline is now the decode's first token, sooner than the prefill watchdog's
        }
    }

    @Override
    public void firstToken(AttemptKey a) {
        if (!attempts.isCurrent(a) || timeline.pastFirstToken()) {
            return;
        }
        long now = System.nanoTime();
        boolean requestsFirst = timeline.firstToken(now);
        ticket.decodeStarted();
        health.firstToken(a);
        if (!timeline.prefillSeenDone()) {
            prefillFinished(); // a unified worker's (or direct decode's) prefill ends at its first token
        }
        if (requestsFirst) {
            services.metrics().firstToken(request.route().label(), Duration.ofNanos(now - timeline.receivedNanos()));
        }
    }

    @Override
    public void relayed(AttemptKey a) {
        long gap = timeline.chunkRelayed(System.nanoTime());
        if (gap > 0) {
            services.metrics().interTokenGap(request.route().label(), gap);
        }
        backpressure.relayed(a); // the client cannot take more: stop reading the decode until it drains
    }

    @Override
    public void responseEnded(AttemptKey a, boolean clean) {
        if (clean) {
            health.decodeSucceeded(a);
        }
        signalClientDone();
        maybeEnd();
    }

    @Override
    public void failed(AttemptKey k, AttemptFailure f) {
        health.failed(f);
        Attempt a = attempts.live();
        if (ended || !attempts.isCurrent(k) || a == null) {
            return; // a stale attempt's late news says something about its worker, nothing more
        }
        failover.failed(a, f);
    }

    @Override
    public void failedAfterCommit(AttemptKey a, AttemptFailure f) {
        health.failed(f);
    }

    @Override
    public void partEnded(AttemptKey a) {
        if (client.ended()) {
            maybeEnd();
        }
    }

    @Override
    public void internalError(AttemptKey a, Throwable error) {
        RequestLog.internalError(services.metrics(), rid, a, error);
        fail(ApiError.internal("the gateway failed while handling this request (rid " + rid + "); the error is "
                + "logged and counted in sluice_internal_errors_total"), AbortCause.INTERNAL_ERROR);
    }

    /** The gateway threw while taking this request, before or after it was admitted: a 500, like {@link #internalError}. */
    public void failInternal(Throwable error) {
        internalError(null, error);
    }

    @Override
    public boolean wantsPromptTokens() {
        return tokens.wantsPrompt();
    }

    @Override
    public void promptTokens(long n) {
        tokens.prompt(n);
    }

    @Override
    public void completionTokens(long n) {
        tokens.completion(n);
    }

    @Override
    public boolean pastFirstToken(AttemptKey a) {
        return attempts.isCurrent(a) && timeline.pastFirstToken();
    }

    // ---- events from the client and the gateway ----

    public void clientWritabilityChanged(boolean writable) {
        backpressure.writabilityChanged(writable);
    }

    /** The client's connection closed: stop everything it started. */
    public void clientGone() {
        if (ended) {
            return;
        }
        client.abandon();
        trace.clientDisconnected();
        queueUpdates.ended(System.nanoTime());
        attempts.retry().cancel();
        Attempt a = attempts.live();
        if (ticket.release()) {
            outcome.first(Outcome.CLIENT_DISCONNECT, "client disconnected while queued");
        } else if (a != null && !a.done()) {
            attempts.stopCurrent(AbortCause.CLIENT_DISCONNECT);
            outcome.first(Outcome.CLIENT_DISCONNECT, "client disconnected");
        } else {
            outcome.first(Outcome.CLIENT_DISCONNECT, "client disconnected between attempts");
        }
        signalClientDone();
        maybeEnd();
    }

    @Override
    public void abortOnDrain(String why) {
        loop.execute(() -> fail(ApiError.rejected(HttpResponseStatus.SERVICE_UNAVAILABLE, "draining", why, 1),
                AbortCause.DRAIN));
    }

    /** A request still waiting on {@code w} for its first byte fails over at once instead of at its deadline. */
    @Override
    public void workerEjected(Worker w) {
        loop.execute(() -> workerLost(w, false));
    }

    /** The operator deleted {@code w}: waiting on it, fail over; streaming from it, stop both halves. */
    @Override
    public void workerRemoved(Worker w) {
        loop.execute(() -> workerLost(w, true));
    }

    private void workerLost(Worker w, boolean removed) {
        Attempt a = attempts.live();
        AttemptFailure f = ended || a == null ? null : failover.workerLost(a, w, removed);
        if (f != null) {
            failed(a.key, f);
        }
    }

    // ---- for the watchdog (ExchangeWatchdog.Guarded) ----

    @Override
    public Attempt attempt() {
        return attempts.current();
    }

    @Override
    public boolean ended() {
        return ended;
    }

    @Override
    public boolean clientBackpressured() {
        return backpressure.paused();
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
        attempts.retry().cancel();
        queueUpdates.ended(System.nanoTime()); // a refusal after waiting says how long it waited
        outcome.first(error.outcome(), error.code() + ": " + error.message());
        if (cause != null) {
            attempts.stopCurrent(cause);
        }
        if (!client.ended()) {
            client.sendError(error);
        }
        signalClientDone();
        maybeEnd();
    }

    @Override // Failover.Host
    public boolean over() {
        return ended || client.ended();
    }

    @Override
    public void waitsAgain() {
        queueUpdates.submitted(System.nanoTime());
    }

    private void signalClientDone() {
        if (!clientDoneSignalled) {
            clientDoneSignalled = true;
            onClientDone.run();
        }
    }

    private void maybeEnd() {
        if (ended || !client.ended() || !attempts.allDone()) {
            return;
        }
        ended = true;
        watchdog.cancel();
        ticket.releaseAtEnd(outcome.outcome() == Outcome.OK, timeline.prefillDoneNanos(), tokens.completion());
        try { // the latencies recorded at the end carry this trace's id, cleared by the trace's end even if it throws
            trace.endAfter(() -> RequestLog.write(RequestLog.facts(rid, request, attempts.current(), attempts.count(),
                    ticket.ticket().orElse(null), ticket.priorityName(), client.status(), outcome.outcome(), timeline,
                    outcome.detail(), trace), services, settings.requestLogging(), tokens.completion(),
                    ticket.ticket().map(Ticket::tenant).orElse(null)), client.status(), outcome.outcome().label(),
                    tokens.completion(), outcome.detail());
        } finally { // last: a pool a reload retires closes (forgets its meters) once this set is empty
            services.live().remove(this);
        }
    }
}
