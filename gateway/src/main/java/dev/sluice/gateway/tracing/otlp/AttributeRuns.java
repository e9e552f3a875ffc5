package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import java.util.Arrays;

/**
 * A span's attributes written as runs copied from the last span of the same name: the gateway's
 * spans of one name carry the same keys in the same order, and most values repeat from request to
 * request (the model, the route, the worker, the tenant, the decision, the status), so the
 * attributes that match the last span's, key for key and value for value, are one array copy
 * together, and only the others (a request id, a token count) are written anew through the {@link
 * KeyValueWriter}. What a collector reads is the same bytes, attribute for attribute (the runs are
 * the bytes written before). Values match as {@link Utf8Cache#sameValue} says: strings, numbers
 * and booleans that write the same bytes, and lists of them element for element (finish reasons; a
 * list is held as an immutable copy, since the one set may change after). The server span's name holds the client's model, so all server
 * spans share one history (the caller names it). Bounded: at most 16 names, and a span's attributes
 * longer than {@link #MAX_KEPT_BYTES} are not held. Not thread-safe: one per encoder.
 */
final class AttributeRuns {
    private static final int NAMES = 32; // a power of two, above the gateway's span names
    private static final int MAX_ATTRIBUTES = 64; // a span with more is written attribute by attribute
    static final int MAX_KEPT_BYTES = 16 * 1024;

    /** The last span of one name: its attributes, and where each one's bytes end in {@code bytes}. */
    private static final class Last {
        final AttributeKey<?>[] keys = new AttributeKey<?>[MAX_ATTRIBUTES];
        final Object[] values = new Object[MAX_ATTRIBUTES];
        final int[] ends = new int[MAX_ATTRIBUTES];
        int count;
        int field;
        byte[] bytes = new byte[256];

    }

    private final ProtoWriter out;
    private final KeyValueWriter keyValues;
    private final NameTable<Last> table = new NameTable<>(NAMES, name -> new Last());
    private final int[] ends = new int[MAX_ATTRIBUTES];

    AttributeRuns(ProtoWriter out, KeyValueWriter keyValues) {
        this.out = out;
        this.keyValues = keyValues;
    }

    /** Writes the {@code span}'s attributes as field {@code field} entries, where {@code span} is named {@code name}. */
    void write(int field, String name, RawSpan span) {
        int n = span.attributeCount();
        if (n > MAX_ATTRIBUTES || name == null) {
            for (int i = 0; i < n; i++) {
                keyValues.write(field, span.attributeKey(i), span.attributeValue(i));
            }
            return;
        }
        Last last = table.get(name);
        boolean same = last.field == field;
        int start = out.size();
        int run = -1; // the first of the current run of matching attributes, -1: none
        boolean changed = !same || last.count != n;
        for (int i = 0; i < n; i++) {
            AttributeKey<?> key = span.attributeKey(i);
            Object value = span.attributeValue(i);
            if (same && i < last.count && last.keys[i] == key && Utf8Cache.sameValue(last.values[i], value)) {
                if (run < 0) {
                    run = i;
                }
                continue;
            }
            if (run >= 0) {
                copy(last, run, i, start);
                run = -1;
            }
            keyValues.write(field, key, value);
            ends[i] = out.size() - start;
            changed = true;
        }
        if (run >= 0) {
            copy(last, run, n, start);
        }
        if (changed) {
            keep(last, field, span, n, start);
        }
    }

    // last's attributes [from, to) as they were written, and their ends in this span's bytes
    private void copy(Last last, int from, int to, int start) {
        int begin = from == 0 ? 0 : last.ends[from - 1];
        int shift = out.size() - start - begin;
        out.raw(last.bytes, begin, last.ends[to - 1] - begin);
        for (int i = from; i < to; i++) {
            ends[i] = last.ends[i] + shift;
        }
    }

    private void keep(Last last, int field, RawSpan span, int n, int start) {
        int length = out.size() - start;
        if (length > MAX_KEPT_BYTES) { // not held: the next span of this name is written whole
            Arrays.fill(last.keys, null);
            Arrays.fill(last.values, null);
            last.count = 0;
            last.bytes = new byte[256];
            return;
        }
        if (last.bytes.length < length) {
            last.bytes = new byte[Math.max(length, 2 * last.bytes.length)];
        }
        System.arraycopy(out.array(), start, last.bytes, 0, length);
        for (int i = 0; i < n; i++) {
            last.keys[i] = span.attributeKey(i);
            last.values[i] = Utf8Cache.kept(span.attributeValue(i)); // null: a value that never matches
        }
        Arrays.fill(last.keys, n, last.count > n ? last.count : n, null);
        Arrays.fill(last.values, n, last.count > n ? last.count : n, null);
        System.arraycopy(ends, 0, last.ends, 0, n);
        last.count = n;
        last.field = field;
    }
}
