package dev.sluice.gateway.tracing.otlp;

import java.util.function.Function;

/**
 * A small table of entries by name (an attribute's, a span's), made on first use: open addressing
 * over the name's cached hash, found by the string's identity first (the gateway's names are
 * constants), then its equality. Bounded: when half its slots are taken it starts over empty, so
 * names made at run time without end cost a fixed amount of memory. Not thread-safe: one per encoder.
 */
final class NameTable<T> {
    private final int mask;
    private final Function<String, T> make;
    private String[] names;
    private Object[] entries;
    private int size;

    /** A table of {@code slots} slots (a power of two), {@code make} making a name's entry. */
    NameTable(int slots, Function<String, T> make) {
        if (Integer.bitCount(slots) != 1) {
            throw new IllegalArgumentException("slots must be a power of two: " + slots);
        }
        this.mask = slots - 1;
        this.make = make;
        this.names = new String[slots];
        this.entries = new Object[slots];
    }

    @SuppressWarnings("unchecked")
    T get(String name) {
        int h = name.hashCode();
        String[] n = names;
        int i = (h ^ (h >>> 16)) & mask;
        while (true) {
            String k = n[i];
            if (k == null) {
                break;
            }
            if (k == name || k.equals(name)) {
                return (T) entries[i];
            }
            i = (i + 1) & mask;
        }
        if (size == (mask + 1) / 2) { // start over rather than grow
            names = new String[mask + 1];
            entries = new Object[mask + 1];
            size = 0;
            return get(name);
        }
        T entry = make.apply(name);
        size++;
        n[i] = name;
        entries[i] = entry;
        return entry;
    }

    /** How many names the table holds now (at most half its slots). */
    int size() {
        return size;
    }
}
