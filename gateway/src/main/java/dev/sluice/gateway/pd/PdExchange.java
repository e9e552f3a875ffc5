package dev.sluice.gateway.pd;

import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.routing.PrefixKey;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.health.FailureKind;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import dev.sluice.gateway.logging.LogThrottle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client request, from admission until its response and every attempt at it have ended. It
 * owns what does not depend on the protocol: the admission ticket, the client's response, the
 * deadlines and the stall watchdog, retries on another pair, and what health learns from the
 * outcome. Each try on a prefill/decode pair is an {@link Attempt}. If a half fails, stalls
 * or times out, or the client leaves, both halves are stopped at once; a failure that is safe to
 * retry (nothing reached the client yet, see {@link AttemptFailure}) sends the request, with its
 * one ticket, back to admission for another pair. Lives on the client's event loop; no locks.
 */
public final class PdExchange implements TicketListener {
    private static final Logger log = LoggerFactory.getLogger(PdExchange.class);
    /** Lines per second for requests that ended rejected or invalid (all of them counted in metrics). */
    static final int CLIENT_CAUSED_LINES_PER_SECOND = 50;
    private static final LogThrottle CLIENT_CAUSED_LINES = new LogThrottle(CLIENT_CAUSED_LINES_PER_SECOND);
    /** Longest the prefill keeps its room while the decode's abort is acknowledged. */
    static final long DECODE_ACK_WAIT_MS = 250;

    final PdContext pd;
    final ChannelHandlerContext ctx;
    final GenerationRequest request;
    final ClientSink client;
    private final String routeLabel;
    private final ExchangeTimeline timeline;
    private final Runnable onClientDone;
    /** The request's id: the first attempt's rid on the workers, and the id in every log line. */
    final String rid;

    /** The attempt that speaks for the request now (null before the first grant). */
    private Attempt attempt;
    private final List<Attempt> attempts = new ArrayList<>(1);
    private ScheduledFuture<?> timer;
    private ScheduledFuture<?> retryTimer;
    /** The decode is paused because the client stopped taking bytes (set and cleared with the pause). */
    private boolean clientBackpressured;
    private boolean clientDoneSignalled;
    private boolean ended;
    private Ticket ticket;
    private PromptText prompt;
    private boolean promptTokensReported;
    private long completionTokens;
    private Outcome outcome = Outcome.OK;
    private String detail = "";

    public PdExchange(PdContext pd, ChannelHandlerContext ctx, GenerationRequest request, boolean keepAlive,
                      long receivedNanos, Runnable onClientDone) {
        this.pd = pd;
        this.ctx = ctx;
        this.request = request;
        this.rid = RequestIds.next();
        this.client = new ClientSink(ctx, rid, keepAlive, pd.metrics());
        this.routeLabel = request.route().label();
        this.timeline = new ExchangeTimeline(receivedNanos, pd.timeouts(), pd.health().config().watchdog(),
                request.stream());
        this.onClientDone = onClientDone;
        pd.live().add(this);
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
        ticket = new Ticket(rid, tokens, priority, tenant, deadlineNanos, ctx.channel().eventLoop(), this)
                // rendering the prompt costs up to 64K characters of work on the loop: only for a policy that reads it
                .prefixKey(pd.routingUsesPrefix() ? PrefixKey.of(request.route().label(), request.body()) : "")
                .direct(pd.directDecodeMaxTokens() > 0 && tokens <= pd.directDecodeMaxTokens()
                        && request.batchSize() == 0);
        Rejection r = pd.admission().submit(ticket);
        if (r != null) {
            rejected(r);
        }
    }

    @Override
    public void rejected(Rejection r) {
        var reason = r.reason();
        if (reason == dev.sluice.gateway.admission.RejectReason.EVICTED) {
            pd.metrics().abortCause("evicted");
        }
        fail(ApiError.rejected(reason.status(), reason.code(), r.message(), r.retryAfterSeconds()), null);
    }

    @Override
    public void granted(Worker p, Worker d) {
        if (ended || client.ended()) {
            pd.admission().release(ticket); // the client left between the grant and now
            maybeEnd();
            return;
        }
        start(p, d);
    }

    /** Rewrites the body for the granted pair (fresh rid and rooms on a retry) and sends both halves. */
    private void start(Worker p, Worker d) {
        String attemptRid = attempts.isEmpty() ? rid : RequestIds.next();
        Attempt a = pd.drivers().newAttempt(this, p, d, attemptRid);
        attempt = a;
        attempts.add(a);
        timeline.attemptStarted(System.nanoTime(), pd.admission().expectedPrefillNanos(ticket),
                pd.drivers().disaggregated() || request.stream());
        armTimer();
        if (!a.send(ctx.channel().eventLoop())) {
            a.giveUp();
            fail(ApiError.internal("cannot build the worker request"), null);
        }
    }

    // ---- events from the attempt and the client ----

    /** The first token reached the gateway (first decode chunk, or the prefill half finished). */
    void firstToken() {
        long now = System.nanoTime();
        if (timeline.firstTokenNanos == 0) {
            timeline.firstTokenNanos = now;
            prefillFinished(attempt);
            pd.metrics().firstToken(routeLabel, java.time.Duration.ofNanos(now - timeline.receivedNanos));
        }
        timeline.lastChunkNanos = now;
    }

    /** The prefill's work is done: its prompt tokens stop counting against the pending budget. */
    void prefillFinished(Attempt a) {
        if (a != attempt) {
            return;
        }
        timeline.prefillDone(System.nanoTime());
        if (ticket != null) {
            pd.admission().prefillDone(ticket);
        }
        if (!ended && timeline.firstTokenNanos == 0) {
            armTimer(); // the next deadline is now the decode's first token, sooner than the prefill watchdog's
        }
    }

    /** A worker said how many prompt tokens this request had: the estimator learns from it. */
    void reportPromptTokens(long tokens) {
        if (!promptTokensReported && prompt != null && request.batchSize() == 0 && tokens > 0) {
            promptTokensReported = true;
            pd.counter().observe(prompt, tokens);
            pd.metrics().promptTokens(tokens);
        }
    }

    /** The worker's completion-token count so far (cumulative in SGLang's streams: keep the largest). */
    void reportCompletionTokens(long tokens) {
        completionTokens = Math.max(completionTokens, tokens);
    }

    boolean wantsPromptTokens() {
        return !promptTokensReported && request.batchSize() == 0;
    }

    boolean pastFirstToken() {
        return timeline.pastFirstToken();
    }

    void chunkRelayed() {
        long now = System.nanoTime();
        if (timeline.lastChunkNanos != 0 && now > timeline.lastChunkNanos && now - timeline.firstTokenNanos > 0) {
            pd.metrics().interTokenGap(routeLabel, now - timeline.lastChunkNanos);
        }
        timeline.lastChunkNanos = now;
        if (!client.writable()) {
            // the client cannot take more: stop reading the decode until it drains
            clientBackpressured = true;
            attempt.decodeCall.pauseReading();
        }
    }

    public void clientWritabilityChanged(boolean writable) {
        if (writable && attempt != null && attempt.decodeCall != null) {
            if (clientBackpressured) {
                // the client made progress: the idle clock restarts (the worker was not idle, it was held)
                clientBackpressured = false;
                timeline.lastChunkNanos = System.nanoTime();
            }
            attempt.decodeCall.resumeReading();
        }
    }

    /** The client's connection closed: stop everything it started. */
    public void clientGone() {
        if (ended) {
            return;
        }
        client.abandon();
        cancelRetry();
        if (ticket != null && pd.admission().release(ticket)) {
            outcome = Outcome.CLIENT_DISCONNECT;
            detail = "client disconnected while queued";
        } else if (attempt != null && !attempt.givenUp() && !attempt.done()) {
            attempt.giveUp();
            attempt.stop("client_disconnect");
            outcome = Outcome.CLIENT_DISCONNECT;
            detail = "client disconnected";
        } else if (outcome == Outcome.OK) {
            outcome = Outcome.CLIENT_DISCONNECT;
            detail = "client disconnected between attempts";
        }
        signalClientDone();
        maybeEnd();
    }

    /** The drain grace period is over: stop this request (both halves) and tell the client. Any thread. */
    public void abortOnDrain() {
        ctx.executor().execute(this::abortForDrain);
    }

    private void abortForDrain() {
        fail(ApiError.rejected(io.netty.handler.codec.http.HttpResponseStatus.SERVICE_UNAVAILABLE, "draining",
                "the gateway shut down before this request finished", 1), "drain");
    }

    /**
     * Health took {@code w} out of rotation. Any thread. A request still waiting on it for its first
     * byte is failed over at once (or answered), instead of waiting out its deadline on a dead worker.
     */
    public void workerEjected(Worker w) {
        ctx.executor().execute(() -> {
            Attempt a = attempt;
            if (ended || a == null || a.givenUp() || client.committed()) {
                return;
            }
            boolean needed = w == a.decode || (w == a.prefill && !a.prefillDone());
            if (needed) {
                attemptFailed(a, new AttemptFailure(ApiError.rejected(
                        io.netty.handler.codec.http.HttpResponseStatus.SERVICE_UNAVAILABLE, "worker_ejected",
                        w.role().label() + " worker " + w.name() + " was taken out of rotation while this request "
                                + "waited on it: " + w.status().reason(), 1), null, null, "worker_ejected"));
            }
        });
    }

    /** The client response is complete (decode relayed to its end). */
    void clientResponseEnded() {
        signalClientDone();
        maybeEnd();
    }

    void halfEnded() {
        if (client.ended()) {
            maybeEnd();
        }
    }

    /** Counts a failure against its worker in health (and nothing else: the request goes on or is handled). */
    void countAgainstWorker(AttemptFailure f) {
        if (f.culprit() != null && f.kind() != null) {
            pd.health().failure(f.culprit(), f.kind(), f.error().message());
        }
    }

    /**
     * An attempt failed. Health counts it against the worker at fault; then, if nothing has reached
     * the client, the failure is safe to retry and attempts and time are left, both halves are
     * stopped and the request goes back to admission for another pair; otherwise it fails.
     */
    void attemptFailed(Attempt a, AttemptFailure f) {
        if (ended || a != attempt || a.givenUp()) {
            countAgainstWorker(f); // a stale attempt's late news still says something about its worker
            return;
        }
        countAgainstWorker(f);
        String abortCause = RetryPlan.abortCause(f);
        long backoff = ticket == null ? -1 : RetryPlan.backoffNanos(pd.retries(), attempts.size() - 1,
                System.nanoTime(), Math.min(ticket.deadlineNanos(), timeline.receivedNanos
                        + pd.timeouts().request().toNanos()));
        if (f.retryReason() == null || backoff < 0 || client.committed() || client.ended()
                || !pd.workers().ready()) {
            // not safe, no attempt or time left, or no pair to go to: answer now rather than wait
            fail(f.error(), abortCause);
            return;
        }
        a.giveUp();
        a.stop(abortCause);
        timeline.attemptEnded();
        pd.metrics().retry(f.retryReason());
        log.info("retry rid={} attempt={} reason={} failed_prefill={} failed_decode={} backoff_ms={} detail=\"{}\"",
                rid, attempts.size(), f.retryReason(), a.prefill.name(), a.decode.name(), backoff / 1_000_000,
                f.error().message());
        List<Worker> avoid = RetryPlan.avoid(f, a);
        retryTimer = ctx.executor().schedule(() -> {
            retryTimer = null;
            if (!ended && !client.ended() && !pd.admission().requeue(ticket, avoid)) {
                fail(f.error(), null);
            }
        }, backoff, TimeUnit.NANOSECONDS);
    }

    private void cancelRetry() {
        if (retryTimer != null) {
            retryTimer.cancel(false);
            retryTimer = null;
        }
    }

    /**
     * Fails the request: the current attempt stopped (both halves), the client told (a full error
     * response, or a last error event in a started stream). {@code abortCause} labels the abort metric.
     */
    void fail(ApiError error, String abortCause) {
        if (ended) {
            return;
        }
        cancelRetry();
        if (outcome == Outcome.OK) {
            outcome = error.outcome();
            detail = error.code() + ": " + error.message();
        }
        if (abortCause != null && attempt != null && !attempt.givenUp()) {
            attempt.giveUp();
            attempt.stop(abortCause);
        }
        if (!client.ended()) {
            client.sendError(error);
        }
        signalClientDone();
        maybeEnd();
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
        if (timer != null) {
            timer.cancel(false);
        }
        if (ticket != null) {
            pd.admission().release(ticket);
        }
        pd.live().remove(this);
        long now = System.nanoTime();
        if (completionTokens > 0) {
            pd.metrics().completionTokens(completionTokens);
            if (ticket != null) {
                pd.admission().completionTokens(ticket.tenant(), completionTokens); // its tenant's token rate
            }
        }
        if (outcome != Outcome.OK) {
            pd.recentErrors().add(new RecentErrors.Entry(java.time.Instant.now(), rid, routeLabel, client.status(),
                    outcome.label(), detail));
        }
        pd.metrics().requestEnded(routeLabel, outcome, java.time.Duration.ofNanos(now - timeline.receivedNanos));
        if (!pd.requestLogging().logs(outcome == Outcome.OK)) {
            return; // logging.requests: counted in the metrics above, no line
        }
        Attempt a = attempt;
        long suppressed = 0;
        if (outcome == Outcome.REJECTED || outcome == Outcome.BAD_REQUEST) {
            // a client can cause these at will: a flood costs counters, not a log line each
            suppressed = CLIENT_CAUSED_LINES.tryAcquire(now);
            if (suppressed < 0) {
                return;
            }
        }
        if (suppressed > 0) {
            log.info("request log: {} lines of rejected or invalid requests suppressed (at most {} a second; "
                    + "sluice_requests_total counts every one)", suppressed, CLIENT_CAUSED_LINES_PER_SECOND);
        }
        log.info("request rid={} route={} prefill={} decode={} attempts={} stream={} batch={} tokens={} priority={} "
                        + "tenant={} queued_ms={} status={} outcome={} ttft_ms={} duration_ms={}{}", rid, routeLabel,
                a == null ? "-" : a.prefill.name(), a == null ? "-" : a.decode.name(), attempts.size(), request.stream(),
                request.batchSize(), ticket == null ? "-" : ticket.tokens(),
                ticket == null ? "-" : pd.admission().config().priorities().get(ticket.priority()),
                ticket == null ? "-" : ticket.tenant(),
                ticket == null || a == null ? "-" : TimeUnit.NANOSECONDS.toMillis(ticket.queuedNanos()),
                client.status(), outcome.label(),
                timeline.firstTokenNanos == 0 ? "-" : TimeUnit.NANOSECONDS.toMillis(timeline.firstTokenNanos
                        - timeline.receivedNanos),
                TimeUnit.NANOSECONDS.toMillis(now - timeline.receivedNanos), detail.isEmpty() ? "" : " detail=\""
                        + detail + "\"");
    }

    // ---- deadlines and the stall watchdog ----

    private void armTimer() {
        if (timer != null) {
            timer.cancel(false);
        }
        long delay = Math.max(1, timeline.nextDeadline(client.ended()) - System.nanoTime());
        timer = ctx.channel().eventLoop().schedule(this::checkDeadlines, delay, TimeUnit.NANOSECONDS);
    }

    private void checkDeadlines() {
        if (ended) {
            return;
        }
        ExchangeTimeline.Expiry expiry = timeline.expired(System.nanoTime(), client.ended());
        if (expiry != null) {
            expired(expiry);
        }
        if (!ended) {
            armTimer();
        }
    }

    /**
     * A deadline passed. A stall before the first token is the watchdog's: it counts against the
     * worker that stalled and may be retried elsewhere; when a prefill is late, its decode may be
     * the one stuck (it never took the KV), so the decode gets an immediate active check too.
     */
    private void expired(ExchangeTimeline.Expiry e) {
        Attempt a = attempt;
        if (a == null || a.givenUp()) {
            fail(e.error(), null);
            return;
        }
        switch (e.kind()) {
            case PREFILL_STALL -> {
                // which one? a stuck decode never takes the KV, so its prefill never finishes either:
                // both get a real generation now, and the one that fails it is ejected
                pd.health().suspect(a.prefill);
                pd.health().suspect(a.decode);
                // a unified worker is both: then there is no doubt whose stall it is
                attemptFailed(a, a.prefill == a.decode ? new AttemptFailure(e.error(), a.decode, FailureKind.STALL,
                        "stall") : new AttemptFailure(e.error(), null, null, "stall"));
            }
            case DECODE_STALL -> {
                pd.health().suspect(a.decode); // confirms it even when it is the last decode
                attemptFailed(a, new AttemptFailure(e.error(), a.decode, FailureKind.STALL, "stall"));
            }
            case IDLE_STREAM -> {
                if (clientBackpressured) {
                    // the decode was held by backpressure: the client read nothing for idle_stream; its
                    // own doing, never a worker stall (it would eject healthy workers behind slow readers)
                    fail(ApiError.timeout("the client read nothing of the stream for timeouts.idle_stream="
                            + pd.timeouts().idleStream().toMillis() + " ms"), "slow_client");
                    return;
                }
                countAgainstWorker(new AttemptFailure(e.error(), a.decode, FailureKind.STALL, null));
                fail(e.error(), e.abortCause());
            }
            default -> {
                Worker late = timeline.prefillDoneNanos == 0 ? a.prefill : a.decode;
                countAgainstWorker(new AttemptFailure(e.error(), late, FailureKind.TIMEOUT, null));
                fail(e.error(), e.abortCause());
            }
        }
    }
}
