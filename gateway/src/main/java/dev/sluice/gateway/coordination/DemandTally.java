package dev.sluice.gateway.coordination;

import dev.sluice.gateway.admission.AdmissionObserver;
import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.admission.Ticket;
import java.util.concurrent.atomic.LongAdder;

/**
 * Unmet demand since the last renewal: requests turned away because this replica's share of the
 * queue or of the pending-token budget was full. Reported as demand beyond usage, so a replica
 * that is refusing work asks for more. Wraps admission's observer (called outside its lock).
 */
public final class DemandTally implements AdmissionObserver {
    private final AdmissionObserver next;
    private final LongAdder queueFull = new LongAdder();
    private final LongAdder budgetTokens = new LongAdder();
    private volatile Runnable unmet = () -> { };

    public DemandTally(AdmissionObserver next) {
        this.next = next;
    }

    @Override
    public void rejected(Ticket ticket, RejectReason reason) {
        if (reason == RejectReason.QUEUE_FULL || reason == RejectReason.SHED) {
            queueFull.increment();
            unmet.run();
        } else if (reason == RejectReason.TOKEN_BUDGET_EXCEEDED) {
            budgetTokens.add(ticket.tokens());
            unmet.run();
        }
        next.rejected(ticket, reason);
    }

    @Override
    public void dispatched(Ticket ticket) {
        next.dispatched(ticket);
    }

    /** Told of each refusal for want of this replica's share ({@link FleetLeases#renewSoon}); cheap, any thread. */
    public void onUnmet(Runnable r) {
        this.unmet = java.util.Objects.requireNonNull(r, "r");
    }

    /** Requests refused for want of queue room since the last call (and resets). */
    long takeQueueFull() {
        return queueFull.sumThenReset();
    }

    /** Prompt tokens refused for want of budget since the last call (and resets). */
    long takeBudgetTokens() {
        return budgetTokens.sumThenReset();
    }
}
