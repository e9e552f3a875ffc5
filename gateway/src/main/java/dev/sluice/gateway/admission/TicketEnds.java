package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import dev.sluice.gateway.routing.Worker;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What happens to a ticket after its admission: its prefill done, a retry's requeue, its release
 * (the client left, or the request ended). Each gives back exactly what the ticket holds, once.
 * Under the admission lock; listeners are told after it.
 */
final class TicketEnds {
    private final LimitsInForce limits;
    private final LongSupplier clock;
    private final PriorityQueues queue;
    private final PrefillLedger ledger;
    private final WorkerWindows windows;
    private final QueueJudge judge;
    private final Door.Host host;

    TicketEnds(LimitsInForce limits, LongSupplier clock, PriorityQueues queue, PrefillLedger ledger,
               WorkerWindows windows, QueueJudge judge, Door.Host host) {
        this.limits = limits;
        this.clock = clock;
        this.queue = queue;
        this.ledger = ledger;
        this.windows = windows;
        this.judge = judge;
        this.host = host;
    }

    /** Gives back what {@code t} holds; true if it was still queued (it will never be granted). */
    boolean release(Ticket t, double decodeSeconds, long tokens, After after) {
        ledger.pace.observed(decodeSeconds, tokens);
        boolean wasQueued = t.state == Ticket.State.QUEUED;
        long now = clock.getAsLong();
        switch (t.state) {
            case QUEUED -> judge.removeQueued(queue, t);
            case DISPATCHED -> {
                releasePrefill(t, now, false);
                windows.decodeEnded(t, now);
                ledger.undispatched();
            }
            default -> {
                return false;
            }
        }
        t.state = Ticket.State.ENDED;
        host.dispatch(after, now);
        return wasQueued;
    }

    /** Back to the front of its class, away from {@code failed}; false if it was not dispatched. */
    boolean requeue(Ticket t, List<Worker> failed, After after) {
        if (t.state != Ticket.State.DISPATCHED) {
            return false;
        }
        long now = clock.getAsLong();
        if (t.prefillReleased) {
            ledger.pending(t); // it will be prefilled again
        } else {
            windows.prefillDone(t);
            ledger.prefillEnded(t, now, false);
        }
        t.prefillReleased = false;
        windows.decodeEnded(t, now);
        t.ranks = dev.sluice.gateway.routing.RankChoice.NONE;
        ledger.undispatched();
        failed.forEach(t::avoid);
        t.prefill = null;
        t.decode = null;
        t.state = Ticket.State.QUEUED;
        var config = limits.config();
        if (t.priority >= config.priorities().size()) {
            t.priority = config.priorityIndex(config.defaultPriority()); // dispatched before fewer classes were loaded
        }
        t.enqueuedNanos = now; // admission.queue_timeout bounds each wait for a pair
        queue.addFirst(t);
        host.reviewDue(); // it goes ahead of everyone of its class
        host.dispatch(after, now);
        return true;
    }

    /** Its prefill is done: its tokens stop being pending, and what it took teaches the rate. */
    void prefillDone(Ticket t, After after) {
        if (t.state == Ticket.State.DISPATCHED && !t.prefillReleased) {
            long now = clock.getAsLong();
            releasePrefill(t, now, true);
            host.reviewDue(); // a measured prefill: the rate, and the slack of predictions, may have changed
            host.dispatch(after, now);
        }
    }

    /** Its prefill is over (done, or the request ended before): the window and pending tokens come back. */
    private void releasePrefill(Ticket t, long now, boolean completed) {
        if (!t.prefillReleased) {
            t.prefillReleased = true;
            windows.prefillDone(t);
            ledger.prefillEnded(t, now, completed);
            ledger.notPending(t);
        }
    }
}
