package dev.sluice.gateway.pd;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * One attempt at a request on one prefill/decode pair, in SGLang's bootstrap protocol: the same
 * body (with this attempt's own rid and fresh bootstrap rooms) to both halves at once, the
 * decode's response to the client. Stopping it aborts both halves, decode first. Everything that
 * is not the protocol (retries, the watchdog, health, the client) lives in {@link PdExchange}.
 * Event-loop confined.
 */
final class SglangAttempt {
    final PdExchange ex;
    final Worker prefill;
    final Worker decode;
    /** This attempt's rid on the workers (a retry gets a fresh one, so no abort of the old one can hit it). */
    final String rid;
    BootstrapAssignment assignment;
    UpstreamCall prefillCall;
    UpstreamCall decodeCall;
    PrefillHalf prefillHalf;
    DecodeHalf decodeHalf;
    private boolean prefillStopPending;
    private boolean given;

    SglangAttempt(PdExchange ex, Worker prefill, Worker decode, String rid) {
        this.ex = ex;
        this.prefill = prefill;
        this.decode = decode;
        this.rid = rid;
    }

    /** Sends {@code body} (already rewritten for this pair by {@link SglangBootstrap}) to both halves. */
    void send(EventLoop loop, ByteBuf body) {
        prefill.acquired();
        decode.acquired();
        prefillHalf = new PrefillHalf(this);
        decodeHalf = new DecodeHalf(this);
        prefillCall = new UpstreamCall(ex.pd.pool(), prefill, prefillHalf);
        decodeCall = new UpstreamCall(ex.pd.pool(), decode, decodeHalf);
        prefillCall.start(loop, workerRequest(body.retainedDuplicate(), prefill));
        decodeCall.start(loop, workerRequest(body, decode));
    }

    private FullHttpRequest workerRequest(ByteBuf body, Worker worker) {
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
                ex.request.route().path(), body);
        req.headers().set(HttpHeaderNames.HOST, worker.name())
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set(HttpHeaderNames.ACCEPT, ex.request.stream() ? "text/event-stream" : "application/json")
                .set("X-Request-Id", rid);
        return req;
    }

    /** A half failed: hand it to the exchange, which retries, or fails the request, or ignores a stale attempt. */
    void failed(AttemptFailure f) {
        ex.attemptFailed(this, f);
    }

    /** The exchange gave up on this attempt (a retry, or the request ended); it no longer speaks for it. */
    void giveUp() {
        given = true;
    }

    boolean givenUp() {
        return given;
    }

    boolean running() {
        return (decodeHalf != null && !decodeHalf.done()) || (prefillHalf != null && !prefillHalf.done());
    }

    /** Both halves have ended and no abort ordering is pending. */
    boolean done() {
        return !prefillStopPending && (prefillHalf == null || prefillHalf.done())
                && (decodeHalf == null || decodeHalf.done());
    }

    /**
     * Stops both halves. Decode first: the decode must have dropped the request before the prefill
     * drops its room, or the decode sees its KV vanish and reports a KV transfer failure for a
     * request nobody wants any more. So while the decode's abort is in flight the prefill keeps its
     * room (at most {@link PdExchange#DECODE_ACK_WAIT_MS}); then it is stopped too. On a client
     * disconnect both workers get an abort even when a half's response already ended (the prefill
     * may still hold KV for the room; an abort of a finished rid is a no-op on the worker).
     */
    void stop(String cause) {
        boolean clientLeft = "client_disconnect".equals(cause);
        if (running()) {
            ex.pd.metrics().abortCause(cause);
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
                ex.halfEnded();
            }
        };
        var timer = ex.ctx.executor().schedule(stopPrefill, PdExchange.DECODE_ACK_WAIT_MS, TimeUnit.MILLISECONDS);
        decodeGone.addListener(f -> {
            timer.cancel(false);
            stopPrefill.run();
        });
    }

    /** Abort this attempt's request on a worker that may still hold it. */
    Future<Void> sendAbort(Worker worker) {
        return ex.pd.aborts().abort(ex.ctx.channel().eventLoop(), worker, assignment.itemRids());
    }
}
