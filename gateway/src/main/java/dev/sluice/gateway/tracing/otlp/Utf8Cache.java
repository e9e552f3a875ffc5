package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import java.nio.charset.StandardCharsets;

/**
 * The bytes the encoder writes again and again, made once: the UTF-8 of attribute names (a few
 * constants) and of span and event names, and each attribute's last {@code KeyValue} field whole
 * (tag, length, key and value: the same worker, model, route, tenant, outcome, status, attempt
 * number request after request), so that a repeated attribute is one array copy rather than its
 * nested messages written anew. A value that changes every time (a request id, a time) simply
 * replaces the last one, and after a few changes in a row is kept only now and then, so that it
 * does not cost a copy each time. Bounded: the tables never hold more than a fixed number of
 * entries, whatever names a run makes. Not thread-safe: one per encoder.
 */
final class Utf8Cache {
    private static final int KEY_SLOTS = 256; // a power of two, well above the gateway's ~40 attribute names
    private static final int MAX_KEYS = KEY_SLOTS / 2;
    private static final int NAME_SLOTS = 64;
    private final String[] keyNames = new String[KEY_SLOTS];
    private final byte[][] keyBytes = new byte[KEY_SLOTS][];
    private final Object[] lastValues = new Object[KEY_SLOTS];
    private final int[] lastFields = new int[KEY_SLOTS];
    private final byte[][] lastKeyValues = new byte[KEY_SLOTS][];
    private final int[] changes = new int[KEY_SLOTS]; // the slot's misses in a row
    private int keys;
    private final String[] names = new String[NAME_SLOTS];
    private final byte[][] nameBytes = new byte[NAME_SLOTS][];

    /**
     * The slot of {@code key}'s name, found by the name string's identity (the gateway's names are
     * constants, also when a key object is made at run time from one) and, failing that, its equality.
     */
    int slot(AttributeKey<?> key) {
        String name = key.getKey();
        int h = name.hashCode();
        int i = (h ^ (h >>> 16)) & (KEY_SLOTS - 1);
        while (true) {
            String k = keyNames[i];
            if (k == name) {
                return i;
            }
            if (k == null) {
                break;
            }
            if (k.equals(name)) {
                keyNames[i] = name; // the next look-up with this string stops at the identity check
                return i;
            }
            i = (i + 1) & (KEY_SLOTS - 1);
        }
        if (keys == MAX_KEYS) { // names made at run time without end: start over rather than grow
            java.util.Arrays.fill(keyNames, null);
            java.util.Arrays.fill(keyBytes, null);
            java.util.Arrays.fill(lastValues, null);
            java.util.Arrays.fill(lastFields, 0);
            java.util.Arrays.fill(lastKeyValues, null);
            java.util.Arrays.fill(changes, 0);
            keys = 0;
            return slot(key);
        }
        keys++;
        keyNames[i] = name;
        keyBytes[i] = name.getBytes(StandardCharsets.UTF_8);
        return i;
    }

    byte[] keyBytes(int slot) {
        return keyBytes[slot];
    }

    /**
     * The whole field last kept for the attribute in {@code slot} when it was field {@code field}
     * with a value equal to {@code value} (a string, number or boolean: values that cannot change
     * after they are set); null otherwise.
     */
    byte[] keyValue(int slot, int field, Object value) {
        Object last = lastValues[slot];
        if (lastFields[slot] == field && (last == value || (last != null && last.equals(value)))) {
            changes[slot] = 0;
            return lastKeyValues[slot];
        }
        return null;
    }

    /**
     * Keeps {@code bytes[from, to)}, the field {@code field} just written for the attribute in {@code
     * slot} with {@code value}: always after a hit or a first change, then every 16th change in a row.
     */
    void keepKeyValue(int slot, int field, Object value, byte[] bytes, int from, int to) {
        int c = changes[slot];
        changes[slot] = c + 1 == Integer.MAX_VALUE ? 16 : c + 1;
        if (c < 2 || (c & 15) == 0) {
            lastValues[slot] = value;
            lastFields[slot] = field;
            lastKeyValues[slot] = java.util.Arrays.copyOfRange(bytes, from, to);
        }
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
