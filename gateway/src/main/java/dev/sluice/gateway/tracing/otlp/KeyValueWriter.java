package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Value;
import java.util.List;

/**
 * An attribute as OTLP's {@code KeyValue} (common/v1/common.proto): its key, and its value as an
 * {@code AnyValue} of the attribute's type, written into the encoder's {@link ProtoWriter}; the
 * UTF-8 of keys comes from the encoder's {@link Utf8Cache}, and an attribute whose value (a scalar,
 * or a list of them) writes what it wrote last time is the cache's copy of its last field.
 * Not thread-safe: one per {@link TraceRequestEncoder}.
 */
final class KeyValueWriter {
    // field numbers of opentelemetry-proto 1.x
    private static final int KV_KEY = 1, KV_VALUE = 2;
    private static final int ANY_STRING = 1, ANY_BOOL = 2, ANY_INT = 3, ANY_DOUBLE = 4, ANY_ARRAY = 5,
            ANY_BYTES = 7;
    private static final int ARRAY_VALUES = 1;

    private final ProtoWriter out;
    private final Utf8Cache utf8;

    KeyValueWriter(ProtoWriter out, Utf8Cache utf8) {
        this.out = out;
        this.utf8 = utf8;
    }

    /** {@code key} = {@code value} as a {@code KeyValue} in field {@code field} of the message being written. */
    void write(int field, AttributeKey<?> key, Object value) {
        Utf8Cache.Attribute a = utf8.attribute(key);
        byte[] last = a.keyValue(field, key.getType(), value);
        if (last != null) {
            out.raw(last);
            return;
        }
        int start = out.size();
        int m = out.begin(field);
        out.utf8Field(KV_KEY, a.keyBytes);
        int v = out.begin(KV_VALUE);
        switch (key.getType()) {
            case STRING -> out.stringAlways(ANY_STRING, (String) value);
            case BOOLEAN -> bool((Boolean) value);
            case LONG -> integer((Long) value);
            case DOUBLE -> dbl((Double) value);
            case STRING_ARRAY, BOOLEAN_ARRAY, LONG_ARRAY, DOUBLE_ARRAY -> array((List<?>) value);
            case VALUE -> anyValue((Value<?>) value);
        }
        out.end(v);
        out.end(m);
        a.keep(field, key.getType(), value, out.array(), start, out.size());
    }

    private void array(List<?> values) {
        int a = out.begin(ANY_ARRAY);
        for (Object o : values) {
            int e = out.begin(ARRAY_VALUES);
            scalar(o);
            out.end(e);
        }
        out.end(a);
    }

    private void scalar(Object o) {
        if (o instanceof String s) {
            out.stringAlways(ANY_STRING, s);
        } else if (o instanceof Boolean b) {
            bool(b);
        } else if (o instanceof Long l) {
            integer(l);
        } else if (o instanceof Double d) {
            dbl(d);
        }
    }

    // an attribute of the Value type (none of the gateway's): its scalars and bytes as such, the rest as text
    private void anyValue(Value<?> value) {
        Object v = value.getValue();
        if (v instanceof java.nio.ByteBuffer b) {
            byte[] bytes = new byte[b.remaining()];
            b.duplicate().get(bytes);
            out.bytes(ANY_BYTES, bytes);
        } else if (v instanceof String || v instanceof Boolean || v instanceof Long || v instanceof Double) {
            scalar(v);
        } else {
            out.stringAlways(ANY_STRING, value.asString());
        }
    }

    private void bool(boolean b) {
        out.tag(ANY_BOOL, ProtoWriter.VARINT);
        out.varint(b ? 1 : 0);
    }

    private void integer(long l) {
        out.tag(ANY_INT, ProtoWriter.VARINT);
        out.varint(l);
    }

    private void dbl(double d) {
        out.tag(ANY_DOUBLE, ProtoWriter.FIXED64);
        out.fixed64(Double.doubleToRawLongBits(d));
    }
}
