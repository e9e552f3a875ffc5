package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client request served by a prefill/decode pair, SGLang style: the same body to both halves
 * at once, the decode's response to the client. If either half fails, times out, or the client
 * leaves, both halves are stopped at once: their connections closed and an
 * {@code /abort_request} sent to every worker that still holds the request. Lives on the
 * client's event loop; no locks.
 */
public final class PdExchange implements TicketListener {
    private static final Logger log = LoggerFactory.getLogger(PdExchange.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Longest the prefill keeps its room while the decode's abort is acknowledged. */
    static final long DECODE_ACK_WAIT_MS = 250;

    final PdContext pd;
    final ChannelHandlerContext ctx;
    final GenerationRequest request;
    final ClientSink client;
    private final String routeLabel;
    private final ExchangeTimeline timeline;
    private final Runnable onClientDone;
    final String rid;

    Worker prefill;
    Worker decode;
    BootstrapAssignment assignment;
    UpstreamCall prefillCall;
    UpstreamCall decodeCall;
    PrefillHalf prefillHalf;
    DecodeHalf decodeHalf;

    private ScheduledFuture<?> timer;
    private boolean clientDoneSignalled;
    private boolean ended;
    private boolean prefillStopPending;
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
        this.timeline = new ExchangeTimeline(receivedNanos, pd.timeouts(), request.stream());
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
        ticket = new Ticket(rid, tokens, priority, tenant, deadlineNanos, ctx.channel().eventLoop(), this);
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

    /** Rewrites the body for the granted pair and sends both halves. */
    private void start(Worker p, Worker d) {
        prefill = p;
        decode = d;
        prefill.acquired();
        decode.acquired();
        assignment = SglangBootstrap.assign(request, prefill, rid);
        byte[] bytes;
        try {
            bytes = JSON.writeValueAsBytes(request.body());
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            prefill.released();
            decode.released();
            fail(ApiError.internal("cannot serialise the request: " + e.getMessage()), null);
            return;
        }
        ByteBuf body = ctx.alloc().buffer(bytes.length).writeBytes(bytes);
        EventLoop loop = ctx.channel().eventLoop();
        prefillHalf = new PrefillHalf(this);
        decodeHalf = new DecodeHalf(this);
        prefillCall = new UpstreamCall(pd.pool(), prefill, prefillHalf);
        decodeCall = new UpstreamCall(pd.pool(), decode, decodeHalf);
        timeline.dispatchedNanos = System.nanoTime();
        armTimer();
        prefillCall.start(loop, workerRequest(body.retainedDuplicate(), prefill));
        decodeCall.start(loop, workerRequest(body, decode));
    }

    private FullHttpRequest workerRequest(ByteBuf body, Worker worker) {
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
                request.route().path(), body);
        req.headers().set(HttpHeaderNames.HOST, worker.name())
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set(HttpHeaderNames.ACCEPT, request.stream() ? "text/event-stream" : "application/json")
                .set("X-Request-Id", rid);
        return req;
    }

    // ---- events from the halves and the client ----

    /** The first token reached the gateway (first decode chunk, or the prefill half finished). */
    void firstToken() {
        long now = System.nanoTime();
        if (timeline.firstTokenNanos == 0) {
            timeline.firstTokenNanos = now;
            prefillFinished();
            pd.metrics().firstToken(routeLabel, java.time.Duration.ofNanos(now - timeline.receivedNanos));
        }
        timeline.lastChunkNanos = now;
    }

    /** The prefill's work is done: its prompt tokens stop counting against the pending budget. */
    void prefillFinished() {
        if (ticket != null) {
            pd.admission().prefillDone(ticket);
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
            decodeCall.pauseReading();
        }
    }

    public void clientWritabilityChanged(boolean writable) {
        if (writable && decodeCall != null) {
            decodeCall.resumeReading();
        }
    }

    /** The client's connection closed: stop everything it started. */
    public void clientGone() {
        if (ended) {
            return;
        }
        client.abandon();
        if (ticket != null && pd.admission().release(ticket)) {
            outcome = Outcome.CLIENT_DISCONNECT;
            detail = "client disconnected while queued";
        } else if (!halvesDone()) {
            stopHalves("client_disconnect");
            outcome = Outcome.CLIENT_DISCONNECT;
            detail = "client disconnected";
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

    /**
     * Fails the request: both halves stopped, the client told (a full error response, or a last
     * error event in a started stream). {@code abortCause} labels the abort metric.
     */
    void fail(ApiError error, String abortCause) {
        if (ended) {
            return;
        }
        if (outcome == Outcome.OK) {
            outcome = error.outcome();
            detail = error.code() + ": " + error.message();
        }
        if (abortCause != null) {
            stopHalves(abortCause);
        }
        if (!client.ended()) {
            client.sendError(error);
        }
        signalClientDone();
        maybeEnd();
    }

    /**
     * Decode first: the decode must have dropped the request before the prefill drops its room,
     * or the decode sees its KV vanish and reports a KV transfer failure for a request nobody
     * wants any more. So while the decode's abort is in flight the prefill keeps its room (at
     * most {@link #DECODE_ACK_WAIT_MS}); then it is stopped too. On a client disconnect both
     * workers get an abort even when a half's response already ended (the prefill may still hold
     * KV for the room; an abort of a finished rid is a no-op on the worker).
     */
    private void stopHalves(String cause) {
        boolean clientLeft = "client_disconnect".equals(cause);
        boolean running = (decodeHalf != null && !decodeHalf.done()) || (prefillHalf != null && !prefillHalf.done());
        if (running) {
            pd.metrics().abortCause(cause);
        }
        Future<Void> decodeGone = decodeHalf == null ? null : decodeHalf.stop(clientLeft);
        if (prefillHalf == null) {
            return;
        }
        if (decodeGone == null || decodeGone.isDone() || prefillHalf.done()) {
            prefillHalf.stop(clientLeft);
            return;
        }
        prefillStopPending = true;
        Runnable stopPrefill = () -> {
            if (prefillStopPending) {
                prefillStopPending = false;
                prefillHalf.stop(clientLeft);
                maybeEnd();
            }
        };
        var timer = ctx.executor().schedule(stopPrefill, DECODE_ACK_WAIT_MS, TimeUnit.MILLISECONDS);
        decodeGone.addListener(f -> {
            timer.cancel(false);
            stopPrefill.run();
        });
    }

    /** Abort the half's request on its worker, if the worker may still hold it. */
    Future<Void> sendAbort(Worker worker) {
        return pd.aborts().abort(ctx.channel().eventLoop(), worker, assignment.itemRids());
    }

    private boolean halvesDone() {
        return !prefillStopPending && (prefillHalf == null || prefillHalf.done())
                && (decodeHalf == null || decodeHalf.done());
    }

    private void signalClientDone() {
        if (!clientDoneSignalled) {
            clientDoneSignalled = true;
            onClientDone.run();
        }
    }

    private void maybeEnd() {
        if (ended || !client.ended() || !halvesDone()) {
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
        }
        if (outcome != Outcome.OK) {
            pd.recentErrors().add(new RecentErrors.Entry(java.time.Instant.now(), rid, routeLabel, client.status(),
                    outcome.label(), detail));
        }
        pd.metrics().requestEnded(routeLabel, outcome, java.time.Duration.ofNanos(now - timeline.receivedNanos));
        log.info("request rid={} route={} prefill={} decode={} stream={} batch={} tokens={} priority={} tenant={} "
                        + "queued_ms={} status={} outcome={} ttft_ms={} duration_ms={}{}", rid, routeLabel, name(prefill),
                name(decode), request.stream(), request.batchSize(), ticket == null ? "-" : ticket.tokens(),
                ticket == null ? "-" : pd.admission().config().priorities().get(ticket.priority()),
                ticket == null ? "-" : ticket.tenant(),
                ticket == null || timeline.dispatchedNanos == 0 ? "-" : TimeUnit.NANOSECONDS.toMillis(ticket.queuedNanos()),
                client.status(), outcome.label(),
                timeline.firstTokenNanos == 0 ? "-" : TimeUnit.NANOSECONDS.toMillis(timeline.firstTokenNanos - timeline.dispatchedNanos),
                TimeUnit.NANOSECONDS.toMillis(now - timeline.receivedNanos), detail.isEmpty() ? "" : " detail=\"" + detail + "\"");
    }

    private static String name(Worker w) {
        return w == null ? "-" : w.name();
    }

    // ---- deadlines: first token, stream idle, whole request ----

    private void armTimer() {
        long delay = Math.max(1, timeline.nextDeadline(client.ended()) - System.nanoTime());
        timer = ctx.channel().eventLoop().schedule(this::checkDeadlines, delay, TimeUnit.NANOSECONDS);
    }

    private void checkDeadlines() {
        if (ended) {
            return;
        }
        ExchangeTimeline.Expiry expiry = timeline.expired(System.nanoTime(), client.ended());
        if (expiry != null) {
            fail(expiry.error(), expiry.abortCause());
        }
        if (!ended) {
            armTimer();
        }
    }
}
