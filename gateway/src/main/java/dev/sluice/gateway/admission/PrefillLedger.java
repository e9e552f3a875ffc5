package dev.sluice.gateway.admission;

/**
 * Admission's counts of the work it let in: pending prompt tokens (queued plus in prefill, held
 * against {@code max_pending_tokens}), tokens in prefill (ahead of anything queued), requests
 * dispatched and not yet ended, and each prefill worker's rate measured from them ({@link PrefillRates}).
 * Under the admission lock.
 */
final class PrefillLedger {
    final PrefillRates rates;
    final DecodePace pace = new DecodePace();
    final PredictionSlack slack = new PredictionSlack();
    final DispatchLead lead = new DispatchLead();
    private long pendingTokens;
    private long inPrefillTokens;
    private int dispatched;

    PrefillLedger(PrefillRates rates) {
        this.rates = rates;
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

    /** Dispatched to {@code t.prefill} (set before this is called). */
    void dispatched(Ticket t, long now) {
        rates.dispatched(t.prefill, t, now);
        inPrefillTokens += t.tokens;
        dispatched++;
    }

    /** Its prefill ended: {@code completed} (the rate learns from it) or abandoned; its tokens stay pending. */
    void prefillEnded(Ticket t, long now, boolean completed) {
        inPrefillTokens -= t.tokens;
        // a short prompt a decode prefilled itself (direct) says nothing of a prefill worker's rate
        rates.prefillEnded(t.prefill, t, now, completed && !t.direct);
        if (completed && !t.direct && t.predictedPrefillDoneNanos != 0) {
            slack.observed((now - t.predictedPrefillDoneNanos) / 1e9);
        }
        t.predictedPrefillDoneNanos = 0;
    }

    /** Its decode stream ended, or it goes back to the queue for another pair. */
    void undispatched() {
        dispatched--;
    }
}
