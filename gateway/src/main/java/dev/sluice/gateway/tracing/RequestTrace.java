package dev.sluice.gateway.tracing;

import dev.sluice.gateway.metrics.Exemplars;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * The trace of one request (docs/observability.md): a server span with the GenAI and HTTP
 * attributes, a child span for each wait in admission, one per call to a worker (prefill, decode,
 * or a unified worker; a retry's calls are siblings of the first attempt's), the KV handoff, and
 * events for the first token, a retry and a client that left. Each worker request carries a
 * {@code traceparent} naming its call's span, so the workers' own spans join this trace. An
 * unsampled request still has its ids (log line, traceparent with flag 00) and builds no child
 * span. Touched only on the request's event loop.
 */
public final class RequestTrace implements Exemplars.Ids {
    /** Tracing off: every method does nothing. */
    public static final RequestTrace NONE = new RequestTrace();

    /** What the request is, known when it arrives. */
    public record Facts(String operation, String model, long maxTokens, String path, String rid, boolean stream) {
    }

    /** Which call to a worker a span stands for. */
    public enum Call {
        PREFILL("prefill"), DECODE("decode"), UNIFIED("generate");

        final String spanName;

        Call(String spanName) {
            this.spanName = spanName;
        }
    }

    private static final AttributeKey<Long> ATTEMPT = SpanKeys.ATTEMPT;
    // the usual count of each span's attributes (docs/observability.md), so that its array never grows
    private static final int SERVER_ATTRIBUTES = 16, ADMISSION_ATTRIBUTES = 9, CALL_ATTRIBUTES = 8, HANDOFF_ATTRIBUTES = 2;
    private final SpanRecorder recorder;
    private final TraceRoot root; // null: tracing off
    private String traceId; // made when first asked for: a log line or an exemplar
    private String serverSpanHex;
    private String traceStateHeader; // a client's tracestate as its header value, made on the first call
    private final boolean recording;
    private final RecordedSpan server; // null unless recording
    private final List<AttemptSpans> attempts = new ArrayList<>(1);
    private RecordedSpan admission;
    private int admissions;
    private long inputTokens = -1;

    private RequestTrace() {
        this(null, null, null);
    }

    private RequestTrace(SpanRecorder recorder, TraceRoot root, RecordedSpan server) {
        this.recorder = recorder;
        this.root = root;
        this.recording = server != null;
        this.server = server;
    }

    /**
     * The trace of a request that arrived at {@code receivedNanos}, continuing the span in {@code
     * parent} when there is one (a client's traceparent), sampled as {@code sampler} decides.
     */
    static RequestTrace start(SpanRecorder recorder, Sampler sampler, Context parent, Facts f, long receivedNanos) {
        String name = f.model() == null ? f.operation() : f.operation() + " " + f.model();
        TraceRoot root = TraceRoot.decide(sampler, parent, name);
        if (!root.sampled()) {
            return new RequestTrace(recorder, root, null);
        }
        RecordedSpan server = root.serverSpan(recorder, name, receivedNanos + root.clockOffset(), SERVER_ATTRIBUTES)
                .set(SpanKeys.GEN_AI_OPERATION, f.operation())
                .set(SpanKeys.HTTP_METHOD, "POST")
                .set(SpanKeys.URL_PATH, f.path())
                .set(SpanKeys.HTTP_ROUTE, f.path())
                .set(SpanKeys.REQUEST_ID, f.rid())
                .set(SpanKeys.STREAM, f.stream());
        if (f.model() != null) {
            server.set(SpanKeys.GEN_AI_MODEL, f.model());
        }
        if (f.maxTokens() > 0) {
            server.set(SpanKeys.GEN_AI_MAX_TOKENS, f.maxTokens());
        }
        return new RequestTrace(recorder, root, server);
    }

    private RecordedSpan child(String name, SpanKind kind, int expectedAttributes) {
        return root.child(recorder, name, kind, expectedAttributes);
    }

    /** The request's trace id as hex (null when tracing is off). */
    @Override
    public String traceId() {
        if (traceId == null && root != null) {
            traceId = root.traceIdHex();
        }
        return traceId;
    }

    /** The gateway's server span id as hex (null when tracing is off). */
    @Override
    public String spanId() {
        if (serverSpanHex == null && root != null) {
            serverSpanHex = TraceIds.hex(root.spanId());
        }
        return serverSpanHex;
    }

    /** The ids for the request's log line ({@code " trace_id=… span_id=…"}), empty when tracing is off. */
    public String logIds() {
        if (root == null) {
            return "";
        }
        return " trace_id=" + traceId() + " span_id=" + spanId();
    }

    /** The trace id of a recorded request (an exemplar's), or null. */
    public String sampledTraceId() {
        return recording ? traceId() : null;
    }

    /**
     * The latencies recorded on this thread from now on carry this request's ids as exemplars (a
     * sampled request only), until {@link #end} or {@link #exemplarOff}. The ids are written out only
     * if a histogram takes an exemplar.
     */
    public void exemplarOn() {
        if (recording) {
            Exemplars.set(this);
        }
    }

    public void exemplarOff() {
        if (recording) {
            Exemplars.clear();
        }
    }

    // ---- admission ----

    /** The request asks admission for a pair (again, after a failed attempt, when {@code admissions > 0}). */
    public void admissionStarted(String priority, String tenant, long promptTokens) {
        if (!recording) {
            return;
        }
        endAdmission();
        inputTokens = inputTokens < 0 ? promptTokens : inputTokens;
        admission = child("admission", SpanKind.INTERNAL, ADMISSION_ATTRIBUTES)
                .set(SpanKeys.PRIORITY, priority).set(SpanKeys.TENANT, tenant)
                .set(SpanKeys.PROMPT_TOKENS, promptTokens).set(ATTEMPT, (long) ++admissions);
    }

    /** Admission granted {@code prefill}/{@code decode} after waiting {@code queuedNanos} in the queue. */
    public void admitted(String prefill, String decode, long queuedNanos) {
        if (admission == null) {
            return;
        }
        admission.set(SpanKeys.DECISION, "granted")
                .set(SpanKeys.QUEUED, queuedNanos > 0)
                .set(SpanKeys.WAIT_MS, TimeUnit.NANOSECONDS.toMillis(queuedNanos))
                .set(SpanKeys.PREFILL, prefill).set(SpanKeys.DECODE, decode);
        endAdmission();
    }

    /** Admission refused the request: its status, reason code, message and Retry-After (seconds, 0: none). */
    public void rejected(int status, String reason, String message, long retryAfterSeconds) {
        if (!recording) {
            return;
        }
        RecordedSpan s = admission != null ? admission : server;
        s.set(SpanKeys.DECISION, "rejected").set(SpanKeys.REASON, reason).status(StatusCode.ERROR, message);
        if (retryAfterSeconds > 0) {
            s.set(SpanKeys.RETRY_AFTER_S, retryAfterSeconds);
            server.set(SpanKeys.HTTP_RETRY_AFTER, List.of(String.valueOf(retryAfterSeconds)));
        }
        server.set(SpanKeys.REASON, reason);
        endAdmission();
    }

    private void endAdmission() {
        if (admission != null) {
            admission.end();
            admission = null;
        }
    }

    // ---- calls to workers ----

    /**
     * A call of attempt {@code key} to {@code worker} (its name, host:port, and that host and port) is
     * being sent: its span starts, and {@code header} is given the {@code traceparent} (and a client's
     * {@code tracestate}) that names it as the parent of the worker's spans. Unsampled: the request's
     * own span is named, with flag 00.
     */
    public void workerCall(Object key, Call call, String worker, String host, int port, String workerRid,
                           BiConsumer<CharSequence, CharSequence> header) {
        if (root == null) {
            return;
        }
        long parentSpan;
        if (recording) {
            AttemptSpans a = attempt(key);
            RecordedSpan s = child(call.spanName, SpanKind.CLIENT, CALL_ATTRIBUTES)
                    .set(SpanKeys.WORKER, worker).set(SpanKeys.SERVER_ADDRESS, host)
                    .set(SpanKeys.SERVER_PORT, (long) port).set(SpanKeys.WORKER_RID, workerRid)
                    .set(ATTEMPT, (long) a.number);
            if (call == Call.PREFILL) {
                a.prefill = s;
            } else {
                a.decode = s;
            }
            parentSpan = s.spanId();
        } else {
            parentSpan = root.spanId();
        }
        header.accept(TraceIds.TRACEPARENT, TraceIds.traceparent(root.traceIdHigh(), root.traceIdLow(), parentSpan, recording));
        if (!root.traceState().isEmpty()) {
            if (traceStateHeader == null) {
                traceStateHeader = TraceIds.traceState(root.traceState());
            }
            header.accept(TraceIds.TRACESTATE, traceStateHeader);
        }
    }

    /** An attribute of attempt {@code key}'s call (its bootstrap room, its KV handoff). */
    public void callAttribute(Object key, Call call, String name, Object value) {
        AttemptSpans a = recording ? find(key) : null;
        RecordedSpan s = a == null ? null : call == Call.PREFILL ? a.prefill : a.decode;
        if (s != null) {
            if (value instanceof Long l) {
                s.set(SpanKeys.longKey(name), l);
            } else {
                s.set(SpanKeys.stringKey(name), String.valueOf(value));
            }
        }
    }

    /** The prefill of {@code key} did its part; a disaggregated attempt's KV handoff starts. */
    public void prefillDone(Object key) {
        AttemptSpans a = recording ? find(key) : null;
        if (a == null || a.prefill == null) {
            return;
        }
        a.prefill.end();
        a.prefill = null;
        a.handoff = child("kv_handoff", SpanKind.INTERNAL, HANDOFF_ATTRIBUTES).set(ATTEMPT, (long) a.number);
    }

    /** The first token reached the gateway ({@code ttftNanos} after the request arrived). */
    public void firstToken(Object key, long ttftNanos) {
        if (!recording) {
            return;
        }
        AttemptSpans a = find(key);
        if (a != null && a.handoff != null) {
            a.handoff.end();
            a.handoff = null;
        }
        server.event("first_token", SpanKeys.TTFT_S, ttftNanos / 1e9);
    }

    /** The decode's (or unified worker's) answer ended; {@code clean}: no failure in it. */
    public void responseEnded(Object key, boolean clean) {
        AttemptSpans a = recording ? find(key) : null;
        if (a != null && a.decode != null) {
            if (!clean) {
                a.decode.status(StatusCode.ERROR, "the answer carried a failure");
            }
            a.decode.end();
            a.decode = null;
        }
    }

    /** Attempt {@code key} failed: {@code kind} (its error code), {@code message}, the worker blamed (or null). */
    public void failed(Object key, String kind, String message, String blamed) {
        AttemptSpans a = recording ? find(key) : null;
        if (a == null) {
            return;
        }
        for (RecordedSpan s : new RecordedSpan[] {a.prefill, a.decode}) {
            if (s != null) {
                s.event("failure", SpanKeys.ERROR_TYPE, kind, SpanKeys.FAILURE, message,
                        SpanKeys.BLAMED_WORKER, blamed == null ? "-" : blamed);
                s.status(StatusCode.ERROR, message);
            }
        }
    }

    /** The request goes back to admission for another pair after {@code backoffNanos} ({@code reason}). */
    public void retrying(Object failedKey, String reason, long backoffNanos) {
        if (!recording) {
            return;
        }
        AttemptSpans a = find(failedKey);
        server.event("retry", SpanKeys.RETRY_REASON, reason,
                SpanKeys.RETRY_BACKOFF_MS, TimeUnit.NANOSECONDS.toMillis(backoffNanos),
                ATTEMPT, a == null ? 0L : a.number);
    }

    /** Attempt {@code key} is stopped ({@code cause}): every call of it still open is aborted, each its own event. */
    public void aborted(Object key, String cause) {
        AttemptSpans a = recording ? find(key) : null;
        if (a == null) {
            return;
        }
        a.abort(cause);
    }

    /** The client's connection closed before the response ended. */
    public void clientDisconnected() {
        if (recording) {
            server.event("client_disconnect");
        }
    }

    /** The finish reasons of the answer the client got ({@code gen_ai.response.finish_reasons}). */
    public void finishReasons(List<String> reasons) {
        if (recording && !reasons.isEmpty()) {
            server.set(SpanKeys.GEN_AI_FINISH_REASONS, List.copyOf(reasons));
        }
    }

    /** The worker's count of the prompt's tokens (the admission estimate until then). */
    public void inputTokens(long n) {
        if (n > 0) {
            inputTokens = n;
        }
    }

    /**
     * Runs {@code write} (the request's log line and end-of-request metrics) with this request's ids
     * as the exemplar, then {@link #end}s the trace, which clears them on this thread even if the
     * write threw: a loop's next request never records under this one's ids.
     */
    public void endAfter(Runnable write, int status, String outcome, long outputTokens, String detail) {
        exemplarOn();
        try {
            write.run();
        } finally {
            end(status, outcome, outputTokens, detail);
        }
    }

    /** The request ended: whatever is still open ends, the server span with the response's facts. */
    public void end(int status, String outcome, long outputTokens, String detail) {
        if (root == null) {
            return;
        }
        exemplarOff();
        if (recording) {
            endAdmission();
            for (AttemptSpans a : attempts) {
                a.endOpen();
            }
            server.set(SpanKeys.HTTP_STATUS, (long) status).set(SpanKeys.OUTCOME, outcome)
                    .set(SpanKeys.ATTEMPTS, (long) attempts.size());
            if (inputTokens >= 0) {
                server.set(SpanKeys.GEN_AI_INPUT_TOKENS, inputTokens);
            }
            if (outputTokens > 0) {
                server.set(SpanKeys.GEN_AI_OUTPUT_TOKENS, outputTokens);
            }
            if (status >= 500 || !"ok".equals(outcome)) {
                server.set(SpanKeys.ERROR_TYPE, status >= 400 ? String.valueOf(status) : outcome);
                if (status >= 500 || status == 0) {
                    server.status(StatusCode.ERROR, detail);
                }
            }
            server.end();
        }
    }

    private AttemptSpans attempt(Object key) {
        AttemptSpans a = find(key);
        if (a == null) {
            a = new AttemptSpans(key, attempts.size() + 1);
            attempts.add(a);
        }
        return a;
    }

    private AttemptSpans find(Object key) {
        for (int i = attempts.size() - 1; i >= 0; i--) {
            if (attempts.get(i).key == key) {
                return attempts.get(i);
            }
        }
        return null;
    }
}
