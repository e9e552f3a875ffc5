package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * A newcomer's admission: the refusals that need no shared state (before the lock), then, under the
 * admission lock, its tenant's rate, room in the queue and the budget (by eviction if it must), its
 * deadline at the known rates; then it is queued and the dispatcher runs.
 */
final class Door {
    /** What the door asks of the controller that owns the lock. */
    interface Host {
        /** Runs the dispatcher (under the lock). */
        void dispatch(After after, long now);

        /** A review should run at the next sweep. */
        void reviewDue();
    }

    private final LimitsInForce limits;
    private final WorkerSet workers;
    private final LongSupplier clock;
    private final BooleanSupplier draining;
    private final PriorityQueues queue;
    private final PrefillLedger ledger;
    private final PrefillRates prefill;
    private final TenantRates rates;
    private final QueueJudge judge;
    private final Host host;

    Door(LimitsInForce limits, WorkerSet workers, LongSupplier clock, BooleanSupplier draining, PriorityQueues queue,
         PrefillLedger ledger, PrefillRates prefill, TenantRates rates, QueueJudge judge, Host host) {
        this.limits = limits;
        this.workers = workers;
        this.clock = clock;
        this.draining = draining;
        this.queue = queue;
        this.ledger = ledger;
        this.prefill = prefill;
        this.rates = rates;
        this.judge = judge;
        this.host = host;
    }

    /** The refusals that need none of the locked state: draining, no worker to serve it, a prompt too large. */
    Rejection atTheDoor(Ticket t) {
        AdmissionConfig config = limits.config();
        if (draining.getAsBoolean()) {
            return Rejections.draining();
        }
        boolean prefill = anyAvailable(workers.prefill());
        boolean decode = anyAvailable(workers.decode());
        if (!prefill || !decode) {
            // both short: name the role that no probe can bring back (ejected, starting) before a suspect one
            boolean namePrefill = !prefill && (decode || !Rejections.anySuspect(workers.prefill())
                    || Rejections.anySuspect(workers.decode()));
            return Rejections.noWorker(config, namePrefill ? "prefill" : "decode",
                    namePrefill ? workers.prefill() : workers.decode(), clock.getAsLong());
        }
        if (t.tokens > config.maxRequestTokens()) {
            return Rejections.tooLarge(config, t);
        }
        return null;
    }

    /** Under the lock: the tenant's rate, room (by eviction if it must), the deadline; then queue and dispatch. */
    Rejection admit(Ticket t, After after) {
        long now = clock.getAsLong();
        limits.fenceLapsed(now);
        AdmissionConfig config = limits.config();
        long rateWait = rates.waitNanos(t.tenant, now);
        if (rateWait > 0) {
            rates.refused(t.tenant, t.tokens, now); // unmet demand, for the tenant's lease (coordination)
            return Rejections.tenantRate(config, t, rateWait);
        }
        double rate = prefill.clusterRate();
        long pendingTokens = ledger.pendingTokens();
        EvictionPlan room = EvictionPlan.plan(t, queue, pendingTokens, config);
        // With nobody waiting, a request that a window can take now never waits: it passes even when
        // the queue has no room (max_queued_requests: 0 means "never wait", not "never serve").
        boolean passThroughOnly = room.queueStaysFull(queue, config);
        if (passThroughOnly && queue.size() > 0) {
            return Rejections.queueFull(config, prefill.remainingTokens(now) / rate);
        }
        if (room.overBudget(t, pendingTokens, config)) {
            return Rejections.tokenBudget(config, t, pendingTokens, rate);
        }
        t.enqueuedNanos = now;
        queue.commitDue(now, Nanos.of(config.scheduling().shedCommitAfter()));
        queue.add(t); // in its place (its class, its tenant's turn, its deadline), to see what is ahead of it
        List<Forecast.Late> late = judge.late(queue, t, QueueJudge.shedLongest(config), now);
        for (Forecast.Late l : late) {
            if (l.ticket() == t) {
                queue.remove(t);
                if (late.size() > 1) {
                    host.reviewDue(); // the others' fate is judged again without it, at the next review
                }
                if (l.committedSpared() > 0) {
                    return Rejections.sparesCommitted(config, l.committedSpared(), l.predictedSeconds());
                }
                return l.shed() ? Rejections.shed(config, t, now, l.tokensAhead() / rate)
                        : Rejections.deadlineUnreachable(config, (long) l.tokensAhead(), rate, l.predictedSeconds());
            }
        }
        judge.evict(queue, room, t, config, now, after);
        judge.notServed(queue, late, config, now, after); // it goes ahead of these (a higher class, an earlier deadline, a shorter prompt)
        t.state = Ticket.State.QUEUED;
        ledger.pending(t);
        host.dispatch(after, now);
        if (passThroughOnly && t.state == Ticket.State.QUEUED) {
            judge.removeQueued(queue, t); // it would have to wait, and there is no room to wait in
            t.state = Ticket.State.ENDED;
            return Rejections.queueFull(config, prefill.remainingTokens(now) / rate);
        }
        return null;
    }

    private static boolean anyAvailable(List<Worker> list) {
        for (Worker w : list) {
            if (w.acceptsNewRequests()) {
                return true;
            }
        }
        return false;
    }
}
