package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * Writes a batch of ended spans as one OTLP {@code ExportTraceServiceRequest} (the protobuf of
 * opentelemetry-proto's {@code collector/trace/v1/trace_service.proto} and {@code trace/v1/trace.proto}),
 * straight from each span's fields into one reused {@link ProtoWriter}: no marshaler object a span,
 * attribute or event, no size pass. What a collector decodes is what the SDK's own OTLP exporter
 * sends for the same spans (TraceRequestEncoderTest decodes both with the official classes). Not
 * thread-safe: one encoder per thread (the export thread's for gRPC tests and benchmarks, each event
 * loop's for OTLP/HTTP).
 */
public final class TraceRequestEncoder {
    // field numbers of opentelemetry-proto 1.x
    static final int REQUEST_RESOURCE_SPANS = 1;
    static final int RS_RESOURCE = 1, RS_SCOPE_SPANS = 2, RS_SCHEMA_URL = 3;
    private static final int RESOURCE_ATTRIBUTES = 1;
    static final int SS_SCOPE = 1, SS_SPANS = 2, SS_SCHEMA_URL = 3;
    private static final int SCOPE_NAME = 1, SCOPE_VERSION = 2, SCOPE_ATTRIBUTES = 3;
    private static final int SPAN_TRACE_ID = 1, SPAN_SPAN_ID = 2, SPAN_TRACE_STATE = 3, SPAN_PARENT_SPAN_ID = 4,
            SPAN_NAME = 5, SPAN_KIND = 6, SPAN_START = 7, SPAN_END = 8, SPAN_ATTRIBUTES = 9,
            SPAN_DROPPED_ATTRIBUTES = 10, SPAN_EVENTS = 11, SPAN_DROPPED_EVENTS = 12, SPAN_LINKS = 13,
            SPAN_DROPPED_LINKS = 14, SPAN_STATUS = 15, SPAN_FLAGS = 16;
    private static final int EVENT_TIME = 1, EVENT_NAME = 2, EVENT_ATTRIBUTES = 3, EVENT_DROPPED_ATTRIBUTES = 4;
    private static final int LINK_TRACE_ID = 1, LINK_SPAN_ID = 2, LINK_TRACE_STATE = 3, LINK_ATTRIBUTES = 4,
            LINK_DROPPED_ATTRIBUTES = 5, LINK_FLAGS = 6;
    private static final int STATUS_MESSAGE = 2, STATUS_CODE = 3;
    // trace.proto's SpanFlags: whether the parent was remote is known (0x100), and is it (0x200)
    private static final int FLAGS_HAS_IS_REMOTE = 0x100, FLAGS_IS_REMOTE = 0x200;

    private static final String SERVER_SPANS = "(server spans)";
    private final ProtoWriter out;
    private final Utf8Cache utf8 = new Utf8Cache();
    private final KeyValueWriter keyValues;
    private final AttributeRuns runs;
    private final StringBuilder traceState = new StringBuilder();
    private int attributesField;
    private final BiConsumer<AttributeKey<?>, Object> attribute = this::keyValue;
    private final BiConsumer<String, String> traceStateEntry = (k, v) ->
            traceState.append(traceState.isEmpty() ? "" : ",").append(k).append('=').append(v);

    public TraceRequestEncoder() {
        this(256 * 1024);
    }

    /** An encoder whose buffer starts at {@code initialCapacity} bytes (it grows when a batch needs more). */
    public TraceRequestEncoder(int initialCapacity) {
        out = new ProtoWriter(initialCapacity);
        keyValues = new KeyValueWriter(out, utf8);
        runs = new AttributeRuns(out, keyValues);
    }

    /**
     * Appends {@code span} as one {@code ScopeSpans.spans} field, exactly the bytes {@link #encode}
     * writes for it inside a batch: spans appended one after another, wrapped by an {@link
     * EncodedBatch}, make the request {@link #encode} makes of the same spans. Appended spans are
     * {@link #array()}[0, {@link #size()}) until {@link #handOver} or {@link #discard}.
     */
    public void append(RawSpan span) {
        rawSpan(span);
    }

    /** Gives the spans appended so far away (the array returned) and goes on, empty, in {@code next}. */
    public byte[] handOver(byte[] next) {
        return out.take(next);
    }

    /** Forgets the spans appended so far. */
    public void discard() {
        out.reset();
    }

    /** Forgets what was appended after the first {@code size} bytes (a span that failed halfway). */
    public void truncate(int size) {
        out.truncate(size);
    }

    /** The {@code ResourceSpans.resource} field of {@code resource}, as {@link #encode} writes it. */
    byte[] resourceField(Resource resource) {
        out.reset();
        resource(resource);
        return java.util.Arrays.copyOf(out.array(), out.size());
    }

    /** The {@code ScopeSpans.scope} field of {@code scope}, as {@link #encode} writes it. */
    byte[] scopeField(InstrumentationScopeInfo scope) {
        out.reset();
        scope(scope);
        return java.util.Arrays.copyOf(out.array(), out.size());
    }

    /** Encodes {@code spans}; the request's bytes are {@link #array()}[0, {@link #size()}) until the next call. */
    public void encode(Collection<SpanData> spans) {
        out.reset();
        if (spans.isEmpty()) {
            return;
        }
        SpanData first = spans.iterator().next();
        boolean oneGroup = true;
        for (SpanData s : spans) {
            if (s.getResource() != first.getResource()
                    || s.getInstrumentationScopeInfo() != first.getInstrumentationScopeInfo()) {
                oneGroup = false;
                break;
            }
        }
        if (oneGroup) { // the gateway's case: one tracer, one resource
            int rs = out.begin(REQUEST_RESOURCE_SPANS);
            resource(first.getResource());
            scopeSpans(first.getInstrumentationScopeInfo(), spans);
            out.string(RS_SCHEMA_URL, first.getResource().getSchemaUrl());
            out.end(rs);
            return;
        }
        Map<Resource, Map<InstrumentationScopeInfo, List<SpanData>>> groups = new LinkedHashMap<>();
        for (SpanData s : spans) {
            groups.computeIfAbsent(s.getResource(), r -> new LinkedHashMap<>())
                    .computeIfAbsent(s.getInstrumentationScopeInfo(), i -> new ArrayList<>()).add(s);
        }
        groups.forEach((resource, scopes) -> {
            int rs = out.begin(REQUEST_RESOURCE_SPANS);
            resource(resource);
            scopes.forEach(this::scopeSpans);
            out.string(RS_SCHEMA_URL, resource.getSchemaUrl());
            out.end(rs);
        });
    }

    public byte[] array() {
        return out.array();
    }

    public int size() {
        return out.size();
    }

    /** Gives up the buffer (a send that timed out may still be reading it) for a fresh one. */
    public void renew() {
        out.renew();
    }

    private void resource(Resource resource) {
        int m = out.begin(RS_RESOURCE);
        attributes(RESOURCE_ATTRIBUTES, resource.getAttributes());
        out.end(m);
    }

    private void scopeSpans(InstrumentationScopeInfo scope, Collection<SpanData> spans) {
        int ss = out.begin(RS_SCOPE_SPANS);
        scope(scope);
        for (SpanData s : spans) {
            span(s);
        }
        out.string(SS_SCHEMA_URL, scope.getSchemaUrl());
        out.end(ss);
    }

    private void scope(InstrumentationScopeInfo scope) {
        int m = out.begin(SS_SCOPE);
        out.string(SCOPE_NAME, scope.getName());
        out.string(SCOPE_VERSION, scope.getVersion());
        attributes(SCOPE_ATTRIBUTES, scope.getAttributes());
        out.end(m);
    }

    private void span(SpanData s) {
        if (s instanceof RawSpan r) {
            rawSpan(r);
            return;
        }
        int m = out.begin(SS_SPANS);
        SpanContext c = s.getSpanContext();
        out.hexId(SPAN_TRACE_ID, c.getTraceId());
        out.hexId(SPAN_SPAN_ID, c.getSpanId());
        traceState(SPAN_TRACE_STATE, c.getTraceState());
        SpanContext parent = s.getParentSpanContext();
        if (parent.isValid()) {
            out.hexId(SPAN_PARENT_SPAN_ID, parent.getSpanId());
        }
        out.string(SPAN_NAME, s.getName());
        out.tag(SPAN_KIND, ProtoWriter.VARINT);
        out.varint(kind(s.getKind()));
        fixed64(SPAN_START, s.getStartEpochNanos());
        fixed64(SPAN_END, s.getEndEpochNanos());
        attributes(SPAN_ATTRIBUTES, s.getAttributes());
        uint(SPAN_DROPPED_ATTRIBUTES, s.getTotalAttributeCount() - s.getAttributes().size());
        eventsAndLinks(s);
        status(s.getStatus());
        flags(SPAN_FLAGS, c, parent.isRemote());
        out.end(m);
    }

    // the same fields in the same order as span(), read without making objects
    private void rawSpan(RawSpan s) {
        int m = out.beginWide(SS_SPANS); // most spans are 128 bytes or more: their bytes do not move at the end
        out.id(SPAN_TRACE_ID, s.traceIdHigh(), s.traceIdLow());
        out.id(SPAN_SPAN_ID, s.spanId());
        traceState(SPAN_TRACE_STATE, s.traceState());
        if (s.parentSpanId() != 0) {
            out.id(SPAN_PARENT_SPAN_ID, s.parentSpanId());
        }
        name(SPAN_NAME, s.getName());
        out.tag(SPAN_KIND, ProtoWriter.VARINT);
        out.varint(kind(s.getKind()));
        fixed64(SPAN_START, s.getStartEpochNanos());
        fixed64(SPAN_END, s.getEndEpochNanos());
        int n = s.attributeCount();
        // server spans are named after the client's model: one history for them all, not one a model
        runs.write(SPAN_ATTRIBUTES, s.getKind() == SpanKind.SERVER ? SERVER_SPANS : s.getName(), s);
        uint(SPAN_DROPPED_ATTRIBUTES, s.getTotalAttributeCount() - n);
        eventsAndLinks(s);
        int status = out.begin(SPAN_STATUS);
        out.string(STATUS_MESSAGE, s.statusDescription());
        uint(STATUS_CODE, statusCode(s.statusCode()));
        out.end(status);
        out.tag(SPAN_FLAGS, ProtoWriter.FIXED32);
        out.fixed32((s.traceFlags() & 0xFF) | FLAGS_HAS_IS_REMOTE | (s.parentRemote() ? FLAGS_IS_REMOTE : 0));
        out.endWide(m);
    }

    private void eventsAndLinks(SpanData s) {
        List<EventData> events = s.getEvents();
        for (int i = 0; i < events.size(); i++) {
            event(events.get(i));
        }
        uint(SPAN_DROPPED_EVENTS, s.getTotalRecordedEvents() - events.size());
        List<LinkData> links = s.getLinks();
        for (int i = 0; i < links.size(); i++) {
            link(links.get(i));
        }
        uint(SPAN_DROPPED_LINKS, s.getTotalRecordedLinks() - links.size());
    }

    private static int statusCode(StatusCode code) {
        return code == StatusCode.OK ? 1 : code == StatusCode.ERROR ? 2 : 0;
    }

    private static int kind(SpanKind kind) {
        return switch (kind) {
            case INTERNAL -> 1;
            case SERVER -> 2;
            case CLIENT -> 3;
            case PRODUCER -> 4;
            case CONSUMER -> 5;
        };
    }

    private void event(EventData e) {
        int m = out.begin(SPAN_EVENTS);
        fixed64(EVENT_TIME, e.getEpochNanos());
        name(EVENT_NAME, e.getName());
        if (e instanceof RawEvent r) { // the gateway's own: its pairs as recorded, no Attributes made
            int n = r.attributeCount();
            attributesField = EVENT_ATTRIBUTES;
            for (int i = 0; i < n; i++) {
                keyValue(r.attributeKey(i), r.attributeValue(i));
            }
            uint(EVENT_DROPPED_ATTRIBUTES, r.getTotalAttributeCount() - n);
        } else {
            attributes(EVENT_ATTRIBUTES, e.getAttributes());
            uint(EVENT_DROPPED_ATTRIBUTES, e.getTotalAttributeCount() - e.getAttributes().size());
        }
        out.end(m);
    }

    private void link(LinkData l) {
        int m = out.begin(SPAN_LINKS);
        SpanContext c = l.getSpanContext();
        out.hexId(LINK_TRACE_ID, c.getTraceId());
        out.hexId(LINK_SPAN_ID, c.getSpanId());
        traceState(LINK_TRACE_STATE, c.getTraceState());
        attributes(LINK_ATTRIBUTES, l.getAttributes());
        uint(LINK_DROPPED_ATTRIBUTES, l.getTotalAttributeCount() - l.getAttributes().size());
        flags(LINK_FLAGS, c, c.isRemote());
        out.end(m);
    }

    private void status(StatusData status) {
        int m = out.begin(SPAN_STATUS); // present even when unset, as the SDK's exporter sends it
        out.string(STATUS_MESSAGE, status.getDescription());
        uint(STATUS_CODE, statusCode(status.getStatusCode()));
        out.end(m);
    }

    private void flags(int field, SpanContext c, boolean remote) {
        out.tag(field, ProtoWriter.FIXED32);
        out.fixed32((c.getTraceFlags().asByte() & 0xFF) | FLAGS_HAS_IS_REMOTE | (remote ? FLAGS_IS_REMOTE : 0));
    }

    private void traceState(int field, TraceState state) {
        if (state.isEmpty()) {
            return;
        }
        traceState.setLength(0);
        state.forEach(traceStateEntry);
        out.string(field, traceState.toString());
    }

    private void attributes(int field, Attributes attributes) {
        attributesField = field;
        attributes.forEach(attribute);
    }

    private void keyValue(AttributeKey<?> key, Object value) {
        keyValues.write(attributesField, key, value);
    }

    // a span's or event's name: one of a few constants, or the same server span name request after request
    private void name(int field, String name) {
        if (name != null && !name.isEmpty()) {
            out.utf8Field(field, utf8.nameBytes(name));
        }
    }

    private void fixed64(int field, long v) {
        if (v != 0) {
            out.tag(field, ProtoWriter.FIXED64);
            out.fixed64(v);
        }
    }

    private void uint(int field, int v) {
        if (v != 0) {
            out.tag(field, ProtoWriter.VARINT);
            out.varint(v);
        }
    }
}
