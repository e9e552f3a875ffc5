package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.routing.Worker;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The decode half, whose response is the client's. A stream is relayed chunk by chunk as it
 * arrives (zero-copy, never aggregated), with backpressure: the client response is committed
 * only at the first chunk, so a failure before the first token still gets an honest status.
 * A non-streamed response is held (bounded) and checked before it is relayed.
 */
final class DecodeHalf extends PdHalf {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long ERROR_BODY_LIMIT = 64 * 1024;

    private int status;
    private boolean ok;
    private boolean streaming;
    private String contentType = "text/event-stream";
    private BoundedBody body;
    // logprob merging: events wait here until the prefill's logprobs are known
    private SseFramer framer;
    private LogprobMerger merger;
    private final List<String> heldEvents = new ArrayList<>();
    private final FailureScan scan = new FailureScan();
    /** The stream reported a failure after it was committed: its end is no success for health. */
    private boolean failedInStream;
    private byte[] heldBody;
    private boolean endHeld;

    private final ClientSink client;

    DecodeHalf(Attempt at) {
        super(at);
        this.client = scope.client();
    }

    @Override
    Worker worker() {
        return at.decode;
    }

    @Override
    public void onResponseHead(HttpResponse head) {
        status = head.status().code();
        ok = status / 100 == 2;
        String ct = head.headers().get(HttpHeaderNames.CONTENT_TYPE);
        if (ct != null) {
            contentType = ct;
        }
        streaming = ok && (contentType.startsWith("text/event-stream") || (scope.request().stream() && ct == null));
        if (!streaming) {
            body = new BoundedBody(ok ? scope.services().maxResponseBodyBytes() : ERROR_BODY_LIMIT);
        } else if (at.mergesPrefillLogprobs()) {
            framer = new SseFramer();
        }
    }

    @Override
    public void onContent(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        try {
            if (done()) {
                return;
            }
            if (!streaming) {
                body.append(content.content());
                if (last) {
                    bufferedFinished();
                }
                return;
            }
            ByteBuf data = content.content();
            if (data.isReadable() && !relay(data)) {
                return;
            }
            if (last) {
                markDone();
                if (framer != null && merger == null) {
                    endHeld = true; // the stream ends once the prefill's logprobs arrive
                } else {
                    endClient();
                }
            }
        } finally {
            content.release();
        }
    }

    /**
     * Relays one chunk; false if it turned out to be the worker's failure and the request failed. Before
     * anything reached the client a failure in the stream (an error event, an abort finish) fails the
     * attempt with an honest status; after, it is relayed as the worker sent it and only counted. The
     * first chunk is judged on the events it completes: a first event cut in two by the network would be
     * relayed before it is judged (SGLang writes each event whole, and a first event is small).
     */
    private boolean relay(ByteBuf data) {
        FailureScan.Found found = scan.feed(data);
        if (found != null) {
            countFailure(found.abort() ? "stream_abort" : "stream_error", found.message());
            AttemptFailure f = AttemptFailure.fromScan(found, at.decode, "decode");
            if (!client.committed()) {
                // nothing sent yet: the client gets a real status instead of a 200 that says "error" inside
                markDone();
                at.failed(f);
                scope.events().partEnded(at.key);
                return false;
            }
            // relayed to the client as the worker sent it; health still counts it
            scope.events().failedAfterCommit(at.key, f);
            failedInStream = true;
        }
        if (!client.committed()) {
            client.commitStream(HttpResponseStatus.valueOf(status), contentType);
            scope.events().firstToken(at.key);
        }
        // the counts the scan read from whole events (a count cut by a chunk boundary is read when it completes)
        if (scan.promptTokens() > 0 && scope.events().wantsPromptTokens()) {
            scope.events().promptTokens(scan.promptTokens());
        }
        if (scan.completionTokens() > 0) {
            scope.events().completionTokens(scan.completionTokens());
        }
        if (framer == null) {
            client.write(data.retain());
        } else {
            for (String event : framer.feed(data)) {
                if (merger == null) {
                    heldEvents.add(event);
                } else {
                    writeMerged(event);
                }
            }
        }
        scope.events().relayed(at.key);
        return true;
    }

    private void writeMerged(String payload) {
        String out;
        try {
            out = merger.mergeEvent(payload);
        } catch (IOException e) {
            out = payload; // not JSON: relay as the worker sent it
        }
        client.write(Unpooled.wrappedBuffer(SseFramer.encode(out)));
    }

    /** Called by the prefill half once its input logprobs are known. */
    void prefillLogprobsReady(LogprobMerger m) {
        merger = m;
        for (String e : heldEvents) {
            writeMerged(e);
        }
        heldEvents.clear();
        if (heldBody != null) {
            byte[] b = heldBody;
            heldBody = null;
            sendBuffered(b);
        }
        if (endHeld) {
            endHeld = false;
            endClient();
        }
    }

    private void bufferedFinished() {
        markDone();
        if (!ok) {
            String message = WorkerErrorBody.message(body.toByteArray());
            countFailure("status", message);
            failBeforeCommit(AttemptFailure.fromStatus(ApiError.fromWorker(status, "decode", at.decode.name(),
                    message), at.decode, status, message));
            return;
        }
        if (body.overflowed()) {
            countFailure("malformed", "");
            failBeforeCommit(AttemptFailure.malformed(ApiError.malformed("decode", at.decode.name(),
                    "response larger than http.max_response_body"), at.decode));
            return;
        }
        if (at.mergesPrefillLogprobs() && merger == null) {
            heldBody = body.toByteArray();
            return;
        }
        if (merger != null) {
            sendBuffered(body.toByteArray());
        } else {
            sendRelayed(body.array(), body.size());
        }
    }

    /** The common case: the answer goes out as the worker sent it, after one streaming pass for JSON and usage. */
    private void sendRelayed(byte[] bytes, int length) {
        FailureScan.Found found = FailureScan.judgeBody(bytes, length);
        if (found != null) {
            // a 200 whose finish reason says "abort" (SGLang answers an abort without a status code this way)
            countFailure(found.abort() ? "abort" : "status", found.message());
            failBeforeCommit(AttemptFailure.fromScan(found, at.decode, "decode"));
            return;
        }
        try {
            ResponseUsage usage = ResponseUsage.scan(bytes, length);
            if (scope.events().wantsPromptTokens()) {
                scope.events().promptTokens(usage.promptTokens());
            }
            scope.events().completionTokens(usage.completionTokens());
            finishReasons(bytes, length);
        } catch (IOException e) {
            countFailure("malformed", "");
            failBeforeCommit(AttemptFailure.malformed(ApiError.malformed("decode", at.decode.name(),
                    "body is not JSON: " + e.getMessage()), at.decode));
            return;
        }
        sendClient(Unpooled.wrappedBuffer(bytes, 0, length));
    }

    /** With logprobs to merge: the answer is rebuilt from its tree. */
    private void sendBuffered(byte[] bytes) {
        byte[] out = bytes;
        try {
            JsonNode doc = JSON.readTree(bytes);
            if (doc == null || !(doc.isObject() || doc.isArray())) {
                throw new IOException("not a JSON object or list");
            }
            if (scope.events().wantsPromptTokens()) {
                scope.events().promptTokens(PromptTokens.of(doc, "prompt_tokens"));
            }
            scope.events().completionTokens(PromptTokens.of(doc, "completion_tokens"));
            finishReasons(bytes, bytes.length);
            if (merger != null) {
                out = JSON.writeValueAsBytes(merger.merge(doc));
            }
        } catch (IOException e) {
            countFailure("malformed", "");
            failBeforeCommit(AttemptFailure.malformed(ApiError.malformed("decode", at.decode.name(),
                    "body is not JSON: " + e.getMessage()), at.decode));
            return;
        }
        sendClient(Unpooled.wrappedBuffer(out));
    }

    /** A whole answer that failed (nothing reached the client): the attempt fails with it. */
    private void failBeforeCommit(AttemptFailure f) {
        at.failed(f);
        scope.events().partEnded(at.key);
    }

    private void sendClient(ByteBuf content) {
        client.sendFull(HttpResponseStatus.valueOf(status), contentType.isEmpty()
                ? HttpHeaderValues.APPLICATION_JSON : contentType, content);
        scope.events().responseEnded(at.key, true);
    }

    /** A whole answer's finish reasons (a byte search, no parse), for the trace. */
    private void finishReasons(byte[] bytes, int length) {
        FinishReasons r = FinishReasons.collecting();
        r.find(bytes, 0, length);
        scope.events().finishReasons(r.list());
    }

    private void endClient() {
        scope.events().finishReasons(scan.finishReasons());
        client.end();
        scope.events().responseEnded(at.key, !failedInStream);
    }

    @Override
    public void onFailure(UpstreamFailure failure) {
        if (done()) {
            return;
        }
        at.failed(connectionFailed(failure));
        scope.events().partEnded(at.key);
    }
}
