package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.trace.data.EventData;

/**
 * A span event whose attributes the encoder reads by index, as they were recorded. Its {@link
 * EventData} methods describe the same event (the SDK's exporters, tests); {@link TraceRequestEncoder}
 * uses these instead, which make no {@code Attributes} object.
 */
public interface RawEvent extends EventData {
    int attributeCount();

    AttributeKey<?> attributeKey(int i);

    Object attributeValue(int i);
}
