package dev.sluice.gateway.admin;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/** The last N requests that did not end well, with their request ids, for {@code /admin/state}. */
public final class RecentErrors {
    /** One failed, rejected or abandoned request. */
    public record Entry(Instant at, String rid, String route, int status, String outcome, String detail) {
    }

    private final int capacity;
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();

    public RecentErrors(int capacity) {
        this.capacity = capacity;
    }

    public synchronized void add(Entry e) {
        if (entries.size() == capacity) {
            entries.removeFirst();
        }
        entries.addLast(e);
    }

    /** Newest first. */
    public synchronized List<Entry> snapshot() {
        List<Entry> out = new ArrayList<>(entries);
        java.util.Collections.reverse(out);
        return out;
    }
}
