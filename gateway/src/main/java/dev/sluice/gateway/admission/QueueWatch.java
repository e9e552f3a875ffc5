package dev.sluice.gateway.admission;

/**
 * Hears, on its ticket's executor, where a queued request stands: for a client that asked for
 * queue updates ({@code X-Sluice-Queue-Updates}). Told at admission and then about once a second
 * while the ticket is queued; a report may arrive just after the ticket was granted (it was
 * computed before), so a watcher ignores what comes once it has been granted.
 */
public interface QueueWatch {
    /**
     * @param ahead     requests the admission would dispatch before this one (0: it is next)
     * @param etaMillis predicted time until it is dispatched, from the measured prefill rate
     */
    void queued(int ahead, long etaMillis);
}
