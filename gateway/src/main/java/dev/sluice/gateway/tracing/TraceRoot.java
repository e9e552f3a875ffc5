package dev.sluice.gateway.tracing;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.opentelemetry.sdk.trace.samplers.SamplingDecision;
import io.opentelemetry.sdk.trace.samplers.SamplingResult;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The gateway's server span of one request, before anything is recorded: its trace (the client's,
 * from its traceparent, or a new one), its own span id, and the one sampling decision of the trace,
 * taken by the configured {@link Sampler} on the trace id as the SDK takes it (the other spans of
 * the request follow it). Also the trace's clock: epoch nanoseconds anchored once, then advanced by
 * {@link System#nanoTime()}, so that the spans' durations are exact (the SDK anchors a trace the same way).
 */
record TraceRoot(long traceIdHigh, long traceIdLow, long spanId, long parentSpanId,
                 boolean parentRemote, boolean sampled, TraceState traceState, long clockOffset) {

    static TraceRoot decide(Sampler sampler, Context parent, String spanName) {
        SpanContext client = Span.fromContext(parent).getSpanContext();
        long high;
        long low;
        if (client.isValid()) {
            high = TraceIds.parse(client.getTraceId(), 0);
            low = TraceIds.parse(client.getTraceId(), 16);
        } else {
            high = ThreadLocalRandom.current().nextLong();
            low = TraceIds.randomNonZero();
        }
        boolean sampled;
        TraceState state;
        if (sampler instanceof RatioSampler ratio) { // the gateway's own: no hex id made to decide
            sampled = ratio.sampled(client, low);
            state = client.getTraceState();
        } else { // any other sampler (tests) as the SDK asks it
            SamplingResult decision = sampler.shouldSample(parent, TraceIds.hex(high, low), spanName, SpanKind.SERVER,
                    Attributes.empty(), List.of());
            sampled = decision.getDecision() == SamplingDecision.RECORD_AND_SAMPLE;
            state = decision.getUpdatedTraceState(client.getTraceState());
        }
        long clockOffset = TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis()) - System.nanoTime();
        return new TraceRoot(high, low, TraceIds.randomNonZero(),
                client.isValid() ? TraceIds.parse(client.getSpanId(), 0) : 0, client.isRemote(), sampled, state,
                clockOffset);
    }

    /** The trace id as 32 lowercase hex characters (made on each call: only a log line or an exemplar needs it). */
    String traceIdHex() {
        return TraceIds.hex(traceIdHigh, traceIdLow);
    }

    /** The trace's clock now, in epoch nanoseconds. */
    long now() {
        return System.nanoTime() + clockOffset;
    }

    /**
     * The server span itself, starting at {@code startEpochNanos} (a sampled trace only), with room for
     * {@code expectedAttributes} attributes (more still fit).
     */
    RecordedSpan serverSpan(SpanRecorder recorder, String name, long startEpochNanos, int expectedAttributes) {
        return new RecordedSpan(recorder, clockOffset, traceIdHigh, traceIdLow, spanId, parentSpanId, parentRemote,
                TraceFlags.getSampled().asByte(), traceState, name, SpanKind.SERVER, startEpochNanos,
                expectedAttributes);
    }

    /** A child of the server span, started now, with room for {@code expectedAttributes} attributes. */
    RecordedSpan child(SpanRecorder recorder, String name, SpanKind kind, int expectedAttributes) {
        return new RecordedSpan(recorder, clockOffset, traceIdHigh, traceIdLow, TraceIds.randomNonZero(), spanId,
                false, TraceFlags.getSampled().asByte(), traceState, name, kind, now(), expectedAttributes);
    }
}
