package dev.sluice.gateway.tracing;

import dev.sluice.gateway.tracing.otlp.RawEvent;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;

/**
 * One event of a {@link RecordedSpan} (first token, retry, failure, abort, client gone): its time,
 * name and the few attributes it was given, kept as they were passed. The SDK's {@code
 * EventData.create} needs an {@code Attributes}, which sorts and copies its pairs on the event loop
 * for every event; the encoder reads these pairs directly ({@link RawEvent}), and {@link
 * #getAttributes} builds the SDK's form only when asked (the gRPC exporter, tests).
 */
final class RecordedEvent implements RawEvent {
    private static final Object[] NONE = {};
    private final long epochNanos;
    private final String name;
    private final Object[] keyValues; // key, value, key, value...: constant keys, values never null

    private RecordedEvent(long epochNanos, String name, Object[] keyValues) {
        this.epochNanos = epochNanos;
        this.name = name;
        this.keyValues = keyValues;
    }

    static RecordedEvent of(long epochNanos, String name) {
        return new RecordedEvent(epochNanos, name, NONE);
    }

    static <A> RecordedEvent of(long epochNanos, String name, AttributeKey<A> k1, A v1) {
        return new RecordedEvent(epochNanos, name, v1 == null ? NONE : new Object[] {k1, v1});
    }

    static <A, B, C> RecordedEvent of(long epochNanos, String name, AttributeKey<A> k1, A v1, AttributeKey<B> k2,
                                      B v2, AttributeKey<C> k3, C v3) {
        Object[] kv = {k1, v1, k2, v2, k3, v3};
        return new RecordedEvent(epochNanos, name, v1 != null && v2 != null && v3 != null ? kv : withoutNulls(kv));
    }

    // a null value is no attribute, as in the SDK's Attributes
    private static Object[] withoutNulls(Object[] kv) {
        int n = 0;
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i + 1] != null) {
                kv[n++] = kv[i];
                kv[n++] = kv[i + 1];
            }
        }
        return java.util.Arrays.copyOf(kv, n);
    }

    @Override
    public int attributeCount() {
        return keyValues.length / 2;
    }

    @Override
    public AttributeKey<?> attributeKey(int i) {
        return (AttributeKey<?>) keyValues[2 * i];
    }

    @Override
    public Object attributeValue(int i) {
        return keyValues[2 * i + 1];
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Attributes getAttributes() {
        AttributesBuilder b = Attributes.builder();
        for (int i = 0; i < keyValues.length; i += 2) {
            b.put((AttributeKey) keyValues[i], keyValues[i + 1]);
        }
        return b.build();
    }

    @Override
    public long getEpochNanos() {
        return epochNanos;
    }

    @Override
    public int getTotalAttributeCount() {
        return keyValues.length / 2;
    }
}
