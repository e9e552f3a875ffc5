package dev.sluice.gateway.pd;

import dev.sluice.gateway.config.Secret;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.tracing.RequestTrace;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.Future;
import java.util.Optional;

/**
 * One attempt at a request on one prefill/decode pair, in one disaggregation protocol: what every
 * protocol driver implements ({@code disaggregation: sglang | vllm | none}). A driver builds and
 * sends its worker requests and relays the decode's answer through its decode half; it
 * reports what happens through {@link AttemptEvents} and takes the exchange's commands (send, stop,
 * pause and resume the decode). Retries, deadlines, health and the admission budget live in the
 * exchange, so a new protocol does not copy them. Event-loop confined.
 */
abstract class Attempt {
    final RequestScope scope;
    /** Names this attempt in what it reports. */
    final AttemptKey key;
    /** The prefill worker, or the same worker as {@link #decode} for a unified (non-PD) one. */
    final Worker prefill;
    final Worker decode;
    /** This attempt's request id on the workers (a retry gets a fresh one). */
    final String rid;
    private boolean given;
    /** How the decode's answer is read: paused and resumed with the client (null before it is sent). */
    private ReadControl decodeReads;

    Attempt(RequestScope scope, AttemptKey key) {
        this.scope = scope;
        this.key = key;
        this.prefill = key.prefill();
        this.decode = key.decode();
        this.rid = key.rid();
    }

    // ---- commands from the exchange ----

    /** Rewrites the request for this attempt and sends it; false if the body cannot be built (nothing sent). */
    abstract boolean send();

    /** Stops every part of the attempt that still runs, telling the workers (abort or closed connection). */
    abstract void stop(AbortCause cause);

    /** The client cannot take more: stop reading the decode (TCP pushes back on the worker). */
    final void pauseDecode() {
        if (decodeReads != null) {
            decodeReads.pauseReading();
        }
    }

    /** The client drained: read the decode again. */
    final void resumeDecode() {
        if (decodeReads != null) {
            decodeReads.resumeReading();
        }
    }

    /** The driver made the half whose answer is the client's: backpressure applies to it from now on. */
    final void decodeStarted(ReadControl decode) {
        decodeReads = decode;
    }

    /** The exchange gave up on this attempt (a retry, or the request ended); it no longer speaks for it. */
    final void giveUp() {
        given = true;
    }

    // ---- what the exchange may ask ----

    /** Some part is still running on a worker. */
    abstract boolean running();

    /** Everything has ended, including any deliberate ordering of aborts. */
    abstract boolean done();

    /** Whether the prefill has finished its part (the watchdog's prefill deadline no longer applies). */
    abstract boolean prefillDone();

    final boolean givenUp() {
        return given;
    }

    // ---- for the attempt's own halves ----

    /** Tells {@code worker} to drop this attempt's request, if the protocol has a way; completes when it has. */
    abstract Future<Void> sendAbort(Worker worker);

    /** The decode half waits for the prefill's input logprobs (SGLang only). */
    boolean mergesPrefillLogprobs() {
        return false;
    }

    /** Reports a failure of this attempt to the exchange. */
    void failed(AttemptFailure f) {
        scope.events().failed(key, f);
    }

    /**
     * A POST of {@code body} to the request's route on {@code worker}, with this attempt's request id and
     * the {@code traceparent} of its {@code call}'s span (the client's own trace headers are never forwarded).
     */
    final FullHttpRequest workerRequest(ByteBuf body, Worker worker, boolean stream, RequestTrace.Call call) {
        return workerRequest(body, worker, stream, call, -1);
    }

    /** As {@link #workerRequest(ByteBuf, Worker, boolean, RequestTrace.Call)}, naming vLLM's engine {@code dpRank} (-1: none). */
    final FullHttpRequest workerRequest(ByteBuf body, Worker worker, boolean stream, RequestTrace.Call call, int dpRank) {
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
                scope.request().route().path(), body);
        req.headers().set(HttpHeaderNames.HOST, worker.name())
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set(HttpHeaderNames.ACCEPT, stream ? "text/event-stream" : "application/json")
                .set("X-Request-Id", rid);
        if (dpRank >= 0) {
            req.headers().set(DpRankFields.VLLM_HEADER, dpRank);
        }
        scope.trace().workerCall(key, call, worker.name(), worker.address(), worker.port(), rid, req.headers()::set);
        // the worker's own key (workers.api_key_env); the client's Authorization is never forwarded
        Optional<Secret> auth = worker.authorization();
        if (auth.isPresent()) {
            req.headers().set(HttpHeaderNames.AUTHORIZATION, auth.get().reveal());
        }
        return req;
    }
}
