package dev.sluice.gateway.pd;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.Future;

/**
 * One attempt at a request, in one disaggregation protocol: the small interface every protocol
 * driver implements ({@code disaggregation: sglang | vllm | none}). A driver builds and sends its
 * worker requests, relays the decode's answer through a {@link DecodeHalf}, and reports to its
 * {@link PdExchange}: {@code prefillFinished}, {@code firstToken}, {@code clientResponseEnded}, and
 * failures as {@link AttemptFailure}s. Retries, the stall watchdog, health and the client live in
 * the exchange, so a new protocol does not copy them. Event-loop confined.
 */
abstract class Attempt {
    final PdExchange ex;
    /** The prefill worker, or the same worker as {@link #decode} for a unified (non-PD) one. */
    final Worker prefill;
    final Worker decode;
    /** This attempt's request id on the workers (a retry gets a fresh one). */
    final String rid;
    UpstreamCall decodeCall;
    DecodeHalf decodeHalf;
    private boolean given;

    Attempt(PdExchange ex, Worker prefill, Worker decode, String rid) {
        this.ex = ex;
        this.prefill = prefill;
        this.decode = decode;
        this.rid = rid;
    }

    /** Rewrites the request for this attempt and sends it; false if the body cannot be built (nothing sent). */
    abstract boolean send(EventLoop loop);

    /** Stops every part of the attempt that still runs, telling the workers (abort or closed connection). */
    abstract void stop(String cause);

    /** Some part is still running on a worker. */
    abstract boolean running();

    /** Everything has ended, including any deliberate ordering of aborts. */
    abstract boolean done();

    /** Tells {@code worker} to drop this attempt's request, if the protocol has a way; completes when it has. */
    abstract Future<Void> sendAbort(Worker worker);

    /** Whether the prefill has finished its part (the watchdog's prefill deadline no longer applies). */
    abstract boolean prefillDone();

    /** The decode half waits for the prefill's input logprobs (SGLang only). */
    boolean mergesPrefillLogprobs() {
        return false;
    }

    void failed(AttemptFailure f) {
        ex.attemptFailed(this, f);
    }

    /** The exchange gave up on this attempt (a retry, or the request ended); it no longer speaks for it. */
    final void giveUp() {
        given = true;
    }

    final boolean givenUp() {
        return given;
    }

    /** A POST of {@code body} to the request's route on {@code worker}, with this attempt's request id. */
    final FullHttpRequest workerRequest(ByteBuf body, Worker worker, boolean stream) {
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
                ex.request.route().path(), body);
        req.headers().set(HttpHeaderNames.HOST, worker.name())
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set(HttpHeaderNames.ACCEPT, stream ? "text/event-stream" : "application/json")
                .set("X-Request-Id", rid);
        // the worker's own key (workers.api_key_env); the client's Authorization is never forwarded
        java.util.Optional<dev.sluice.gateway.config.Secret> auth = worker.authorization();
        if (auth.isPresent()) {
            req.headers().set(HttpHeaderNames.AUTHORIZATION, auth.get().reveal());
        }
        return req;
    }
}
