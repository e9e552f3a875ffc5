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
 * One sampled span of the gateway, recorded in plain fields: ids as numbers, attributes in two
 * small arrays, no lock, no attribute map, no copy when it ends. Written only on its request's
 * event loop until {@link #end}; then handed to the export queue, whose thread only reads it (the
 * queue's hand-off orders the writes before the reads). The OpenTelemetry SDK's span does the same
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
    private AttributeKey<?>[] keys = new AttributeKey<?>[8];
    private int[] hashes = new int[8];
    private Object[] values = new Object[8];
    private int attributeCount;
    private int droppedAttributes;
    private List<EventData> events;
    private int droppedEvents;
    private StatusCode statusCode = StatusCode.UNSET;
    private String statusDescription = "";

    RecordedSpan(SpanRecorder recorder, long clockOffset, long traceIdHigh, long traceIdLow, long spanId, long parentSpanId,
                 boolean parentRemote, byte flags, TraceState traceState, String name, SpanKind kind,
                 long startEpochNanos) {
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
        // (a call attribute by name) is compared by its hash first, so a new key costs no equals() per attribute
        int hash = key.hashCode();
        for (int i = 0; i < attributeCount; i++) {
            if (keys[i] == key || (hashes[i] == hash && keys[i].equals(key))) {
                values[i] = value;
                return this;
            }
        }
        if (attributeCount == MAX_ATTRIBUTES) {
            droppedAttributes++;
            return this;
        }
        if (attributeCount == keys.length) {
            keys = Arrays.copyOf(keys, keys.length * 2);
            hashes = Arrays.copyOf(hashes, hashes.length * 2);
            values = Arrays.copyOf(values, values.length * 2);
        }
        keys[attributeCount] = key;
        hashes[attributeCount] = hash;
        values[attributeCount++] = value;
        return this;
    }

    void event(String eventName, Attributes attributes) {
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
        events.add(EventData.create(System.nanoTime() + clockOffset, eventName, attributes));
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
            endEpochNanos = Math.max(System.nanoTime() + clockOffset, startEpochNanos);
            recorder.ended(this);
        }
    }

    // ---- read by the OTLP encoder (the export thread, after the hand-off) ----

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
        return keys[i];
    }

    @Override
    public Object attributeValue(int i) {
        return values[i];
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
            b.put((AttributeKey) keys[i], values[i]);
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
