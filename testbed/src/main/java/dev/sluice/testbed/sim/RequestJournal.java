package dev.sluice.testbed.sim;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/** The most recent requests and aborts one server received, bounded, readable from any thread. */
final class RequestJournal {
    private final int limit;
    private final ArrayDeque<RecordedRequest> requests = new ArrayDeque<>();
    private final ArrayDeque<AbortRecord> aborts = new ArrayDeque<>();
    private final ArrayDeque<RankAssignment> ranks = new ArrayDeque<>();

    RequestJournal(int limit) {
        this.limit = limit;
    }

    synchronized void record(RecordedRequest r) {
        if (requests.size() == limit) {
            requests.removeFirst();
        }
        requests.addLast(r);
    }

    synchronized void record(AbortRecord a) {
        if (aborts.size() == limit) {
            aborts.removeFirst();
        }
        aborts.addLast(a);
    }

    synchronized void record(RankAssignment a) {
        if (ranks.size() == limit) {
            ranks.removeFirst();
        }
        ranks.addLast(a);
    }

    synchronized List<RankAssignment> ranks() {
        return List.copyOf(new ArrayList<>(ranks));
    }

    synchronized List<RecordedRequest> requests() {
        return List.copyOf(new ArrayList<>(requests));
    }

    synchronized List<AbortRecord> aborts() {
        return List.copyOf(new ArrayList<>(aborts));
    }

    synchronized void clear() {
        requests.clear();
        aborts.clear();
        ranks.clear();
    }
}
