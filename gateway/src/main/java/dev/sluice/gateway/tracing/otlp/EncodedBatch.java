package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;

/**
 * One OTLP {@code ExportTraceServiceRequest} made of spans encoded earlier ({@link
 * TraceRequestEncoder#append}, where each span ended): the envelope of the gateway's one resource
 * and scope is written around the spans' bytes as they are, so that the export thread copies bytes
 * and reads no span. The result is byte for byte what {@link TraceRequestEncoder#encode} makes of
 * the same spans (EncodedSpanExportTest). Not thread-safe: one per export thread; the body is kept from
 * batch to batch.
 */
public final class EncodedBatch {
    private final byte[] resource;
    private final byte[] scope;
    private final byte[] scopeSchema;
    private final byte[] resourceSchema;
    private final ProtoWriter out = new ProtoWriter(512 * 1024);

    public EncodedBatch(Resource resource, InstrumentationScopeInfo scope) {
        TraceRequestEncoder fields = new TraceRequestEncoder(1024);
        this.resource = fields.resourceField(resource);
        this.scope = fields.scopeField(scope);
        this.scopeSchema = stringField(TraceRequestEncoder.SS_SCHEMA_URL, scope.getSchemaUrl());
        this.resourceSchema = stringField(TraceRequestEncoder.RS_SCHEMA_URL, resource.getSchemaUrl());
    }

    private static byte[] stringField(int field, String value) {
        ProtoWriter w = new ProtoWriter(64);
        w.string(field, value);
        return java.util.Arrays.copyOf(w.array(), w.size());
    }

    /** Starts a request whose spans take {@code spansLength} bytes in all (the sum of what {@link #add} will get). */
    public void begin(int spansLength) {
        out.reset();
        int scopeSpans = scope.length + spansLength + scopeSchema.length;
        int resourceSpans = resource.length + 1 + ProtoWriter.varintSize(scopeSpans) + scopeSpans + resourceSchema.length;
        out.tag(TraceRequestEncoder.REQUEST_RESOURCE_SPANS, ProtoWriter.LEN);
        out.varint(resourceSpans);
        out.raw(resource);
        out.tag(TraceRequestEncoder.RS_SCOPE_SPANS, ProtoWriter.LEN); // one byte: field 2
        out.varint(scopeSpans);
        out.raw(scope);
    }

    /** The first {@code length} bytes of {@code spans}: whole spans as {@link TraceRequestEncoder#append} wrote them. */
    public void add(byte[] spans, int length) {
        out.raw(spans, length);
    }

    public void finish() {
        out.raw(scopeSchema);
        out.raw(resourceSchema);
    }

    public byte[] array() {
        return out.array();
    }

    public int size() {
        return out.size();
    }

    /** Gives up the body (a send that was abandoned may still read it) for a fresh one. */
    public void renew() {
        out.renew();
    }
}
