package dev.sluice.gateway.tracing;

import dev.sluice.gateway.tracing.otlp.RawSpan;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One sampled span of the gateway, recorded in plain fields: ids as numbers, attributes in one
 * small array, no lock, no attribute map, no copy when it ends. Written only on its request's
 * event loop until {@link #end}; then encoded at once on that thread (OTLP/HTTP) or handed to the
 * export queue, whose thread only reads it (gRPC; the queue's hand-off orders the writes before the reads). The OpenTelemetry SDK's span does the same
 * job for any thread, with a lock, a hash map of attributes and an immutable copy at export, which
 * cost the event loop a measurable share of its core (docs/benchmarks.md, "Tracing"). It is also a
 * {@link io.opentelemetry.sdk.trace.data.SpanData}, built on demand, for the SDK's gRPC exporter and for tests.
 */
public final class RecordedSpan implements RawSpan {
    /** The SDK's default limits, kept: past them an attribute or event is dropped and counted. */
    static final int MAX_ATTRIBUTES = 128;
    static final int MAX_EVENTS = 128;

    private final SpanRecorder recorder;
    private final long clockOffset; // the trace's epoch minus System.nanoTime(), as the SDK anchors a trace's clock
    private final long traceIdHigh;
    private final long traceIdLow;
    private final long spanId;
    private final long parentSpanId; // 0: a root span
    private final boolean parentRemote;
    private final byte flags;
    private final TraceState traceState;
    private final String name;
    private final SpanKind kind;
    private final long startEpochNanos;
    private long endEpochNanos;
    // attributes as key, value, key, value...: one array a span (three before: keys, their hashes, values),
    // sized by the caller for the span's usual count so that it never grows on the request path
    private Object[] attributes;
    private int attributeCount;
    private int droppedAttributes;
    private List<EventData> events;
    private int droppedEvents;
    private StatusCode statusCode = StatusCode.UNSET;
    private String statusDescription = "";

    RecordedSpan(SpanRecorder recorder, long clockOffset, long traceIdHigh, long traceIdLow, long spanId, long parentSpanId,
                 boolean parentRemote, byte flags, TraceState traceState, String name, SpanKind kind,
                 long startEpochNanos, int expectedAttributes) {
        this.attributes = new Object[2 * Math.max(1, expectedAttributes)];
        this.recorder = recorder;
        this.clockOffset = clockOffset;
        this.traceIdHigh = traceIdHigh;
        this.traceIdLow = traceIdLow;
        this.spanId = spanId;
        this.parentSpanId = parentSpanId;
        this.parentRemote = parentRemote;
        this.flags = flags;
        this.traceState = traceState;
        this.name = name;
        this.kind = kind;
        this.startEpochNanos = startEpochNanos;
    }

    /** Sets (or replaces) an attribute; null values, and anything after {@link #end}, are ignored as the SDK does. */
    <T> RecordedSpan set(AttributeKey<T> key, T value) {
        if (value == null || endEpochNanos != 0) {
            return this;
        }
        // the gateway's keys are constants: the same object when it is the same key; a key made at run time
        // (a call attribute by name) is compared by its hash first (the API's keys keep theirs), then equals()
        Object[] a = attributes;
        int n = 2 * attributeCount;
        for (int i = 0; i < n; i += 2) {
            Object k = a[i];
            if (k == key || (k.hashCode() == key.hashCode() && k.equals(key))) {
                a[i + 1] = value;
                return this;
            }
        }
        if (attributeCount == MAX_ATTRIBUTES) {
            droppedAttributes++;
            return this;
        }
        if (n == a.length) {
            attributes = a = Arrays.copyOf(a, a.length * 2);
        }
        a[n] = key;
        a[n + 1] = value;
        attributeCount++;
        return this;
    }

    /** An event now with no attribute. */
    void event(String eventName) {
        event(RecordedEvent.of(now(), eventName));
    }

    <A> void event(String eventName, AttributeKey<A> k1, A v1) {
        event(RecordedEvent.of(now(), eventName, k1, v1));
    }

    <A, B, C> void event(String eventName, AttributeKey<A> k1, A v1, AttributeKey<B> k2, B v2, AttributeKey<C> k3,
                         C v3) {
        event(RecordedEvent.of(now(), eventName, k1, v1, k2, v2, k3, v3));
    }

    private long now() {
        return System.nanoTime() + clockOffset;
    }

    private void event(RecordedEvent e) {
        if (endEpochNanos != 0) {
            return;
        }
        if (events == null) {
            events = new ArrayList<>(2);
        }
        if (events.size() == MAX_EVENTS) {
            droppedEvents++;
            return;
        }
        events.add(e);
    }

    /** The span's status; an OK status is final, as in the SDK. */
    void status(StatusCode code, String description) {
        if (endEpochNanos != 0 || statusCode == StatusCode.OK) {
            return;
        }
        statusCode = code;
        statusDescription = description == null ? "" : description;
    }

    /** Ends the span now and hands it to export; a second call does nothing. */
    void end() {
        if (endEpochNanos == 0) {
            endEpochNanos = Math.max(now(), startEpochNanos);
            recorder.ended(this);
        }
    }

    // ---- read by the OTLP encoder (OTLP/HTTP: as it ends, on its own thread; gRPC: the export thread, after the hand-off) ----

    @Override
    public long traceIdHigh() {
        return traceIdHigh;
    }

    @Override
    public long traceIdLow() {
        return traceIdLow;
    }

    @Override
    public long spanId() {
        return spanId;
    }

    @Override
    public long parentSpanId() {
        return parentSpanId;
    }

    @Override
    public boolean parentRemote() {
        return parentRemote;
    }

    @Override
    public byte traceFlags() {
        return flags;
    }

    @Override
    public TraceState traceState() {
        return traceState;
    }

    @Override
    public int attributeCount() {
        return attributeCount;
    }

    @Override
    public AttributeKey<?> attributeKey(int i) {
        return (AttributeKey<?>) attributes[2 * i];
    }

    @Override
    public Object attributeValue(int i) {
        return attributes[2 * i + 1];
    }

    @Override
    public StatusCode statusCode() {
        return statusCode;
    }

    @Override
    public String statusDescription() {
        return statusDescription;
    }

    // ---- SpanData, built on demand ----

    @Override
    public String getName() {
        return name;
    }

    @Override
    public SpanKind getKind() {
        return kind;
    }

    @Override
    public SpanContext getSpanContext() {
        return SpanContext.create(TraceIds.hex(traceIdHigh, traceIdLow), TraceIds.hex(spanId),
                TraceFlags.fromByte(flags), traceState);
    }

    @Override
    public SpanContext getParentSpanContext() {
        if (parentSpanId == 0) {
            return SpanContext.getInvalid();
        }
        String trace = TraceIds.hex(traceIdHigh, traceIdLow);
        String parent = TraceIds.hex(parentSpanId);
        return parentRemote ? SpanContext.createFromRemoteParent(trace, parent, TraceFlags.fromByte(flags), traceState)
                : SpanContext.create(trace, parent, TraceFlags.fromByte(flags), traceState);
    }

    @Override
    public StatusData getStatus() {
        return StatusData.create(statusCode, statusDescription);
    }

    @Override
    public long getStartEpochNanos() {
        return startEpochNanos;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Attributes getAttributes() {
        AttributesBuilder b = Attributes.builder();
        for (int i = 0; i < attributeCount; i++) {
            b.put((AttributeKey) attributes[2 * i], attributes[2 * i + 1]);
        }
        return b.build();
    }

    @Override
    public List<EventData> getEvents() {
        return events == null ? List.of() : events;
    }

    @Override
    public List<LinkData> getLinks() {
        return List.of();
    }

    @Override
    public long getEndEpochNanos() {
        return endEpochNanos;
    }

    @Override
    public boolean hasEnded() {
        return endEpochNanos != 0;
    }

    @Override
    public int getTotalRecordedEvents() {
        return getEvents().size() + droppedEvents;
    }

    @Override
    public int getTotalRecordedLinks() {
        return 0;
    }

    @Override
    public int getTotalAttributeCount() {
        return attributeCount + droppedAttributes;
    }

    @Override
    @SuppressWarnings("deprecation")
    public io.opentelemetry.sdk.common.InstrumentationLibraryInfo getInstrumentationLibraryInfo() {
        InstrumentationScopeInfo s = recorder.scope();
        return io.opentelemetry.sdk.common.InstrumentationLibraryInfo.create(s.getName(), s.getVersion(),
                s.getSchemaUrl());
    }

    @Override
    public InstrumentationScopeInfo getInstrumentationScopeInfo() {
        return recorder.scope();
    }

    @Override
    public Resource getResource() {
        return recorder.resource();
    }

    @Override
    public String toString() {
        return "RecordedSpan{" + name + " " + TraceIds.hex(spanId) + "}";
    }

    @Override
    public boolean equals(Object o) {
        return this == o;
    }

    @Override
    public int hashCode() {
        return Objects.hashCode(spanId);
    }
}
