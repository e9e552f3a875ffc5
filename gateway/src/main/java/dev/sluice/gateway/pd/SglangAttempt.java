package dev.sluice.gateway.pd;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.routing.RankChoice;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.tracing.RequestTrace;
import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * One attempt at a request on one prefill/decode pair, in SGLang's bootstrap protocol: the same
 * body (with this attempt's own rid and fresh bootstrap rooms) to both halves at once, the
 * decode's response to the client. Stopping it aborts both halves, decode first. Everything that
 * is not the protocol (retries, the watchdog, health, the client) lives in the exchange.
 * Event-loop confined.
 */
final class SglangAttempt extends Attempt {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Longest the prefill keeps its room while the decode's abort is acknowledged. */
    static final long DECODE_ACK_WAIT_MS = 250;

    private BootstrapAssignment assignment;
    private PrefillHalf prefillHalf;
    private DecodeHalf decodeHalf;
    private boolean prefillStopPending;

    SglangAttempt(RequestScope scope, AttemptKey key) {
        super(scope, key);
    }

    /**
     * Rewrites the body for this pair (this attempt's rid, fresh rooms) and sends it to both halves: the
     * same bytes, or, on workers routed per data-parallel rank, each half its own rank fields
     * ({@link DpRankFields}; a batch gets rooms at the prefill's rank and no rank fields).
     */
    @Override
    boolean send() {
        GenerationRequest request = scope.request();
        RankChoice ranks = key.ranks();
        boolean ranked = request.batchSize() == 0 && (ranks.prefillRanked() || ranks.decodeRanked());
        ByteBuf body = null;
        ByteBuf decodeBody = null;
        if (request.batchSize() == 0) {
            // the fast path: the client's bytes with the four bootstrap fields spliced in
            assignment = SglangBootstrap.single(rid, ranks);
            String fields = SglangBootstrap.singleFields(prefill, assignment);
            body = WorkerBodies.spliced(scope.alloc(), request, fields + (ranked ? DpRankFields.prefillMembers(ranks) : ""));
            if (body != null && ranked) {
                decodeBody = WorkerBodies.spliced(scope.alloc(), request, fields + DpRankFields.decodeMembers(ranks));
            }
        }
        if (body == null) {
            assignment = SglangBootstrap.assign(request, prefill, rid, ranks);
            try {
                if (ranked) {
                    DpRankFields.forPrefill(request.body(), ranks);
                    body = bytes(request.body());
                    DpRankFields.forDecode(request.body(), ranks);
                    decodeBody = bytes(request.body());
                } else {
                    body = bytes(request.body());
                }
            } catch (JsonProcessingException e) {
                if (body != null) {
                    body.release();
                }
                return false;
            }
        }
        if (decodeBody == null) {
            decodeBody = body.retainedDuplicate();
        }
        prefillHalf = new PrefillHalf(this, this::prefillLogprobsReady);
        decodeHalf = new DecodeHalf(this);
        decodeStarted(decodeHalf);
        prefillHalf.start(workerRequest(body, prefill, request.stream(), RequestTrace.Call.PREFILL));
        decodeHalf.start(workerRequest(decodeBody, decode, request.stream(), RequestTrace.Call.DECODE));
        for (RequestTrace.Call call : new RequestTrace.Call[] {RequestTrace.Call.PREFILL, RequestTrace.Call.DECODE}) {
            scope.trace().callAttribute(key, call, "sluice.sglang.bootstrap_room", assignment.rooms().get(0));
        }
        return true;
    }

    private ByteBuf bytes(com.fasterxml.jackson.databind.node.ObjectNode tree) throws JsonProcessingException {
        byte[] bytes = JSON.writeValueAsBytes(tree);
        return scope.alloc().buffer(bytes.length).writeBytes(bytes);
    }

    /** The decode half, or null before the attempt is sent (tests). */
    DecodeHalf decodeHalf() {
        return decodeHalf;
    }

    /** The prefill half's input logprobs are known: the decode half merges them. */
    private void prefillLogprobsReady(LogprobMerger merger) {
        decodeHalf.prefillLogprobsReady(merger);
    }

    @Override
    boolean mergesPrefillLogprobs() {
        return scope.request().logprobs();
    }

    @Override
    boolean prefillDone() {
        return prefillHalf != null && prefillHalf.done();
    }

    @Override
    boolean running() {
        return (decodeHalf != null && !decodeHalf.done()) || (prefillHalf != null && !prefillHalf.done());
    }

    /** Both halves have ended and no abort ordering is pending. */
    @Override
    boolean done() {
        return !prefillStopPending && (prefillHalf == null || prefillHalf.done())
                && (decodeHalf == null || decodeHalf.done());
    }

    /**
     * Stops both halves. Decode first: the decode must have dropped the request before the prefill
     * drops its room, or the decode sees its KV vanish and reports a KV transfer failure for a
     * request nobody wants any more. So while the decode's abort is in flight the prefill keeps its
     * room (at most {@link #DECODE_ACK_WAIT_MS}); then it is stopped too. On a client disconnect
     * both workers get an abort even when a half's response already ended (the prefill may still
     * hold KV for the room; an abort of a finished rid is a no-op on the worker).
     */
    @Override
    void stop(AbortCause cause) {
        boolean clientLeft = cause == AbortCause.CLIENT_DISCONNECT;
        if (running()) {
            scope.services().metrics().abortCause(cause.label());
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
                scope.events().partEnded(key);
            }
        };
        var timer = scope.loop().schedule(stopPrefill, DECODE_ACK_WAIT_MS, TimeUnit.MILLISECONDS);
        decodeGone.addListener(f -> {
            timer.cancel(false);
            stopPrefill.run();
        });
    }

    /** Abort this attempt's request on a worker that may still hold it. */
    @Override
    Future<Void> sendAbort(Worker worker) {
        return scope.services().aborts().abort(scope.loop(), worker, assignment.itemRids());
    }
}
