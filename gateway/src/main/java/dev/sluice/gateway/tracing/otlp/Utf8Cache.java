package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.AttributeType;
import java.nio.charset.StandardCharsets;

/**
 * The bytes the encoder writes again and again, made once: the UTF-8 of attribute names (a few
 * constants) and of span and event names, and each attribute's last {@code KeyValue} field whole
 * (tag, length, key and value: the same worker, model, route, tenant, outcome, status, attempt
 * number request after request), so that a repeated attribute is one array copy rather than its
 * nested messages written anew; a list (the finish reasons) is kept as an immutable copy and matches
 * element for element. A value that changes every time (a request id, a time) simply
 * replaces the last one, and after a few changes in a row is kept only now and then, so that it
 * does not cost a copy each time. Bounded: the tables never hold more than a fixed number of
 * entries, whatever names a run makes. Not thread-safe: one per encoder.
 */
final class Utf8Cache {
    private static final int KEY_SLOTS = 256; // a power of two, well above the gateway's ~40 attribute names
    private static final int NAME_SLOTS = 64;

    /** One attribute name's bytes and its last field, together (one object to reach, not six arrays). */
    static final class Attribute {
        final byte[] keyBytes;
        private Object lastValue;
        private AttributeType lastType; // not only the value's class: a raw-typed value must not hide behind a hit
        private int lastField;
        private byte[] lastKeyValue;
        private int changes; // misses in a row

        private Attribute(String name) {
            this.keyBytes = name.getBytes(StandardCharsets.UTF_8);
        }

        /**
         * The whole field last kept for this attribute when it was field {@code field} with a value
         * that writes the same bytes as {@code value} ({@link #sameValue}); null otherwise.
         */
        byte[] keyValue(int field, AttributeType type, Object value) {
            if (lastField == field && lastType == type && sameValue(lastValue, value)) {
                changes = 0;
                return lastKeyValue;
            }
            return null;
        }

        /**
         * Keeps {@code bytes[from, to)}, the field {@code field} just written for this attribute with
         * {@code value}: always after a hit or a first change, then every 16th change in a row.
         */
        void keep(int field, AttributeType type, Object value, byte[] bytes, int from, int to) {
            if (!keepable(value)) { // a kind of value that never matches: nothing to hold
                return;
            }
            int c = changes;
            changes = c + 1 == Integer.MAX_VALUE ? 16 : c + 1;
            if ((c < 2 || (c & 15) == 0) && to - from <= MAX_KEPT_FIELD) {
                lastValue = kept(value);
                lastType = type;
                lastField = field;
                lastKeyValue = java.util.Arrays.copyOfRange(bytes, from, to);
            }
        }
    }

    /** A field longer than this (a long prompt as an attribute) is written each time rather than held. */
    static final int MAX_KEPT_FIELD = 1024;

    /**
     * Whether a string, number or boolean {@code b} writes the same bytes as {@code a}: equal, and a
     * double equal bit for bit (equals() takes every NaN for one, and the writer writes each NaN's own
     * bits). Anything else never matches (lists: {@link #sameValue}).
     */
    static boolean sameScalar(Object a, Object b) {
        if (a == b) {
            return a instanceof String || a instanceof Long || a instanceof Boolean || a instanceof Double;
        }
        if (a == null || b == null) {
            return false;
        }
        if (a instanceof Double x) {
            return b instanceof Double y && Double.doubleToRawLongBits(x) == Double.doubleToRawLongBits(y);
        }
        return (a instanceof String || a instanceof Long || a instanceof Boolean) && a.equals(b);
    }

    /**
     * What to hold of {@code value} to match later values against ({@link #sameValue}): a string, number
     * or boolean as it is (they cannot change); a list of them as an immutable copy (the list set may be
     * changed after, the copy cannot; a list already immutable is its own copy, no allocation); null for
     * anything else, which then never matches.
     */
    static Object kept(Object value) {
        if (!keepable(value)) {
            return null;
        }
        return value instanceof java.util.List<?> list ? java.util.List.copyOf(list) : value;
    }

    /** Whether {@link #kept} holds something of {@code value} (a scalar, or a list of them). */
    private static boolean keepable(Object value) {
        if (value instanceof java.util.List<?> list) {
            for (int i = 0, n = list.size(); i < n; i++) {
                Object e = list.get(i);
                if (!sameScalar(e, e)) {
                    return false;
                }
            }
            return true;
        }
        return sameScalar(value, value);
    }

    /**
     * Whether {@code value} writes the same bytes as {@code kept}, a value {@link #kept} returned: a
     * scalar as {@link #sameScalar}; a list when {@code kept} is a list of as many elements, each the
     * same scalar (compared as the value is now, so a list changed since it was set does not match
     * what it held before).
     */
    static boolean sameValue(Object kept, Object value) {
        if (kept == value) { // what kept() returns cannot change: the same object writes the same bytes, and
            return kept != null; // neither is read (a constant, last read a request ago, is a cache miss)
        }
        if (kept instanceof java.util.List<?> k) {
            if (!(value instanceof java.util.List<?> v) || k.size() != v.size()) {
                return false;
            }
            for (int i = 0, n = k.size(); i < n; i++) {
                if (!sameScalar(k.get(i), v.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return sameScalar(kept, value);
    }

    private final NameTable<Attribute> attributes = new NameTable<>(KEY_SLOTS, Attribute::new);
    private final String[] names = new String[NAME_SLOTS];
    private final byte[][] nameBytes = new byte[NAME_SLOTS][];

    /**
     * The entry of {@code key}'s name, found by the name string's identity (the gateway's names are
     * constants, also when a key object is made at run time from one) and, failing that, its equality.
     */
    Attribute attribute(AttributeKey<?> key) {
        return attributes.get(key.getKey());
    }

    /** How many attribute names are held (at most {@code KEY_SLOTS / 2}). */
    int attributeNames() {
        return attributes.size();
    }

    /** The UTF-8 of a span's or event's name. */
    byte[] nameBytes(String name) {
        int h = name.hashCode();
        int i = (h ^ (h >>> 16)) & (NAME_SLOTS - 1);
        String k = names[i];
        if (k != name) {
            if (k == null || !k.equals(name)) {
                nameBytes[i] = name.getBytes(StandardCharsets.UTF_8);
            }
            names[i] = name;
        }
        return nameBytes[i];
    }
}
