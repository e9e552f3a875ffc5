package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import java.util.List;

/**
 * Where each queued request that asked for queue updates stands: its place in the order the
 * dispatcher would take the queue if nothing else arrived ({@link PriorityQueues#serviceOrder}), and
 * when it should be dispatched: the prompt tokens the prefill workers still hold and those queued
 * ahead of it, at the cluster's measured rate, less the window's lead ({@link DispatchLead}). One
 * walk of the queue under the admission lock; the watchers are told after it, on their executors.
 * See docs/admission.md ("Queue updates") for the estimate and when it is wrong.
 */
final class QueueStatus {
    private QueueStatus() {
    }

    /**
     * Tells every watched ticket of {@code order} (or only {@code only}, when not null) where it stands.
     *
     * @param remainingTokens what the prefill workers still have to compute of what they hold
     * @param rate            the cluster's prompt tokens per second
     * @param leadSeconds     the window's lead: how much work a worker still holds when it takes the next one
     */
    static void report(List<Ticket> order, Ticket only, double remainingTokens, double rate, double leadSeconds,
                       After after) {
        double ahead = remainingTokens;
        for (int i = 0; i < order.size(); i++) {
            Ticket t = order.get(i);
            if (t.watch != null && (only == null || only == t)) {
                tell(t, i, etaMillis(ahead, rate, leadSeconds), after);
                if (only != null) {
                    return;
                }
            }
            ahead += t.tokens;
        }
    }

    /** Milliseconds until a request with {@code aheadTokens} of prefill work before it is dispatched. */
    static long etaMillis(double aheadTokens, double rate, double leadSeconds) {
        double seconds = aheadTokens / rate - leadSeconds;
        return seconds > 0 && Double.isFinite(seconds) ? Math.round(seconds * 1000) : 0;
    }

    private static void tell(Ticket t, int ahead, long eta, After after) {
        QueueWatch w = t.watch;
        after.add(() -> t.executor.execute(() -> w.queued(ahead, eta)));
    }
}
