package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.WorkerRole;

/**
 * What admission has given one worker and not yet had back, at a snapshot: a prefill's window
 * (requests and prompt tokens dispatched, not yet prefilled), a decode's streams (until they end);
 * a unified worker has both.
 *
 * @param rankRequests for a worker routed per data-parallel rank, what each rank holds for the
 *                     worker's role (a prefill's window, a decode's or unified worker's streams);
 *                     empty for a worker routed as a whole
 */
public record WorkerWindow(WorkerRole role, int prefillRequests, long prefillTokens, int streams,
                           java.util.List<Integer> rankRequests) {
    public WorkerWindow {
        rankRequests = java.util.List.copyOf(rankRequests);
    }

    public WorkerWindow(WorkerRole role, int prefillRequests, long prefillTokens, int streams) {
        this(role, prefillRequests, prefillTokens, streams, java.util.List.of());
    }

    /** The requests it holds for its role: a prefill's window, a decode's or unified worker's streams. */
    public int requests() {
        return role == WorkerRole.PREFILL ? prefillRequests : streams;
    }

    /** The prompt tokens in its prefill window (0 for a decode). */
    public long tokens() {
        return role == WorkerRole.DECODE ? 0 : prefillTokens;
    }

    public boolean idle() {
        return prefillRequests == 0 && prefillTokens == 0 && streams == 0;
    }
}
