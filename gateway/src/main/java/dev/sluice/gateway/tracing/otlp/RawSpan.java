package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.trace.data.SpanData;

/**
 * A span whose fields the encoder reads as they are: ids as numbers, attributes by index, the
 * status as its parts. Its {@link SpanData} methods describe the same span (the SDK's exporters,
 * tests); {@link TraceRequestEncoder} uses these instead, which make no objects.
 */
public interface RawSpan extends SpanData {
    long traceIdHigh();

    long traceIdLow();

    long spanId();

    /** The parent's span id, 0 for a root span. */
    long parentSpanId();

    boolean parentRemote();

    byte traceFlags();

    TraceState traceState();

    int attributeCount();

    AttributeKey<?> attributeKey(int i);

    Object attributeValue(int i);

    StatusCode statusCode();

    String statusDescription();
}
