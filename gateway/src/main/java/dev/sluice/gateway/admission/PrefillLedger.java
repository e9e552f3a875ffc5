package dev.sluice.gateway.admission;

/**
 * Admission's counts of the work it let in: pending prompt tokens (queued plus in prefill, held
 * against {@code max_pending_tokens}), tokens in prefill (ahead of anything queued), requests
 * dispatched and not yet ended, and the prefill rate measured from them. Under the admission lock.
 */
final class PrefillLedger {
    final PrefillThroughput throughput;
    private long pendingTokens;
    private long inPrefillTokens;
    private int dispatched;

    PrefillLedger(PrefillThroughput throughput) {
        this.throughput = throughput;
    }

    long pendingTokens() {
        return pendingTokens;
    }

    long inPrefillTokens() {
        return inPrefillTokens;
    }

    int dispatched() {
        return dispatched;
    }

    /** Queued, or requeued after its prefill was done: its tokens are pending (again). */
    void pending(Ticket t) {
        pendingTokens += t.tokens;
    }

    /** Left the queue without being dispatched (expired, evicted, abandoned). */
    void notPending(Ticket t) {
        pendingTokens -= t.tokens;
    }

    void dispatched(Ticket t, long now) {
        if (inPrefillTokens == 0) {
            throughput.busy(true, now); // only busy time measures the rate
        }
        inPrefillTokens += t.tokens;
        dispatched++;
    }

    /** Its prefill ended: {@code completed} (the rate learns from it) or abandoned; its tokens stay pending. */
    void prefillEnded(Ticket t, long now, boolean completed) {
        inPrefillTokens -= t.tokens;
        if (completed) {
            throughput.completed(t.tokens, now);
        }
        if (inPrefillTokens == 0) {
            throughput.busy(false, now);
        }
    }

    /** Its decode stream ended, or it goes back to the queue for another pair. */
    void undispatched() {
        dispatched--;
    }
}
