package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import java.util.List;

/**
 * Where each queued request that asked for queue updates stands: its place in the order the
 * dispatcher would take the queue if nothing else arrived ({@link PriorityQueues#serviceOrder}), and
 * when it should be dispatched: the prompt tokens the prefill workers still hold and those queued
 * ahead of it, at the cluster's measured rate, less the window's lead ({@link DispatchLead}). A
 * newcomer's first report is read from the queue's indexes; the periodic one is one walk of the
 * queue for all watchers. Under the admission lock; the watchers are told after it, on their executors.
 * See docs/admission.md ("Queue updates") for the estimate and when it is wrong.
 */
final class QueueStatus {
    private QueueStatus() {
    }

    /**
     * Tells every watched ticket of {@code order} (service order) where it stands: one walk, for the
     * periodic report (about once a second, whatever the number of watchers).
     *
     * @param remainingTokens what the prefill workers still have to compute of what they hold
     * @param rate            the cluster's prompt tokens per second
     * @param leadSeconds     the window's lead: how much work a worker still holds when it takes the next one
     */
    static void report(List<Ticket> order, double remainingTokens, double rate, double leadSeconds, After after) {
        long queued = 0;
        for (int i = 0; i < order.size(); i++) {
            Ticket t = order.get(i);
            if (t.watch != null) {
                tell(t, i, etaMillis(remainingTokens + queued, rate, leadSeconds), after);
            }
            queued += t.tokens;
        }
    }

    /**
     * Tells {@code t} alone where it stands (its first report, at admission): from what the queue's
     * indexes say is served before it ({@link PriorityQueues#place}), no walk; the same figures the
     * walk gives it.
     */
    static void report(Ticket t, QueuePlace place, double remainingTokens, double rate, double leadSeconds,
                       After after) {
        tell(t, place.count, etaMillis(remainingTokens + place.tokens, rate, leadSeconds), after);
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
