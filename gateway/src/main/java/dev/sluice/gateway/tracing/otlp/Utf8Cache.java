package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.api.common.AttributeKey;
import java.nio.charset.StandardCharsets;

/**
 * The UTF-8 bytes of the strings the encoder writes again and again, made once: attribute names (a
 * few constants), the last value of each attribute (the same worker, model, route, tenant, outcome
 * request after request; a request id changes every time and simply replaces it) and span and event
 * names. Each hit saves the export thread an encode into a fresh array. Bounded: the tables never
 * hold more than a fixed number of entries, whatever names a run makes. Not thread-safe: one per
 * encoder.
 */
final class Utf8Cache {
    private static final int KEY_SLOTS = 256; // a power of two, well above the gateway's ~40 attribute names
    private static final int MAX_KEYS = KEY_SLOTS / 2;
    private static final int NAME_SLOTS = 64;
    private final String[] keyNames = new String[KEY_SLOTS];
    private final byte[][] keyBytes = new byte[KEY_SLOTS][];
    private final String[] lastValues = new String[KEY_SLOTS];
    private final byte[][] lastValueBytes = new byte[KEY_SLOTS][];
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
            java.util.Arrays.fill(lastValueBytes, null);
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

    /** The UTF-8 of {@code value}, a value of the attribute in {@code slot}. */
    byte[] valueBytes(int slot, String value) {
        String last = lastValues[slot];
        if (last != value) {
            if (last == null || !last.equals(value)) {
                lastValueBytes[slot] = value.getBytes(StandardCharsets.UTF_8);
            }
            lastValues[slot] = value;
        }
        return lastValueBytes[slot];
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
