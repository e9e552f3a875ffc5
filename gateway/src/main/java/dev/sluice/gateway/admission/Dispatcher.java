package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;

/**
 * Hands the head of the queue to a prefill/decode pair while one has room for it, in strict
 * order: when the head cannot go, nobody overtakes it. A head whose first token could no longer
 * come before its deadline is answered instead of being sent. Under the admission lock; grants
 * and rejections are left to run after it.
 */
final class Dispatcher {
    private final WorkerSet workers;
    private final WorkerWindows windows;
    private final TenantRates rates;
    private final PrefillLedger ledger;
    private final AdmissionObserver observer;

    Dispatcher(WorkerSet workers, WorkerWindows windows, TenantRates rates, PrefillLedger ledger,
               AdmissionObserver observer) {
        this.workers = workers;
        this.windows = windows;
        this.rates = rates;
        this.ledger = ledger;
        this.observer = observer;
    }

    void dispatch(PriorityQueues queue, AdmissionConfig config, long now, After after) {
        Ticket head;
        while ((head = queue.peek()) != null) {
            Worker[] pair = pair(head, now);
            if (pair == null) {
                return;
            }
            if (!head.direct && ledger.rates.known() && ledger.rates.couldPushLate(pair[0], head, now, ledger.pace)) {
                returnTrials(pair); // it waits (nobody overtakes it) until the earlier one is surely queued there
                return;
            }
            queue.poll();
            long predictedDone = predictedPrefillDone(head, pair[0], now);
            if (pastUsefulness(head, predictedDone, now, config)) {
                returnTrials(pair); // never sent: a half-open or suspect worker's trial permit goes back
                ledger.notPending(head);
                head.state = Ticket.State.ENDED;
                Rejections.tell(after, observer, head, Rejections.tooLate(config, head, now,
                        ledger.rates.remainingTokens(now) / ledger.rates.clusterRate()));
                continue;
            }
            head.predictedPrefillDoneNanos = predictedDone; // for the slack to learn from when it is done
            grant(head, pair[0], pair[1], now, after);
        }
    }

    private static void returnTrials(Worker[] pair) {
        pair[0].returnTrial();
        if (pair[1] != pair[0]) {
            pair[1].returnTrial();
        }
    }

    /** {prefill, decode} with room for {@code head} and, if half-open, a trial permit; else null: it waits. */
    private Worker[] pair(Ticket head, long now) {
        Worker p;
        Worker d;
        if (head.direct) {
            d = windows.pickDirectDecode(head, now); // a short prompt the decode prefills itself
            p = d;
        } else {
            p = windows.pickPrefill(head, now);
            // a unified worker (disaggregation: none) is its own decode; pickPrefill checked its stream room
            d = p == null ? null : workers.unified() ? p : windows.pickDecode(head, now);
        }
        // a half-open worker takes a limited number of trial requests
        if (p == null || d == null || !p.takeForNewRequest()) {
            return null;
        }
        if (d != p && !d.takeForNewRequest()) {
            p.returnTrial();
            return null;
        }
        return new Worker[] {p, d};
    }

    private void grant(Ticket head, Worker p, Worker d, long now, After after) {
        head.prefill = p;
        head.decode = d;
        head.dispatchedNanos = now;
        if (!head.direct && now > head.enqueuedNanos) {
            // it waited: how much its worker still held is the window's lead (queue updates' estimate)
            ledger.lead.observed(ledger.rates.secondsUntilDone(p, 0, now));
        }
        ledger.dispatched(head, now);
        head.ranks = windows.dispatched(p, d, head.tokens, head.rankBlocks, head.routing);
        windows.awaitDecodeStart(head);
        windows.routed(head);
        head.windowTokensAtDispatch = windows.windowTokens(p);
        head.state = Ticket.State.DISPATCHED;
        if (!head.rateCharged) {
            rates.charge(head.tenant, head.tokens, now); // its prompt: once, however often it is retried
            head.rateCharged = true;
        }
        after.add(() -> {
            observer.dispatched(head);
            head.executor.execute(() -> head.listener.granted(p, d));
        });
    }

    /**
     * When {@code t}'s prefill should be done if sent to {@code prefill} now: what that worker still
     * holds plus its own prompt, at the worker's rate; 0 while the rates are only guessed, and for a
     * short prompt a decode prefills itself (direct).
     */
    private long predictedPrefillDone(Ticket t, Worker prefill, long now) {
        PrefillRates rates = ledger.rates;
        if (t.direct || !rates.known()) {
            return 0;
        }
        double seconds = rates.secondsUntilDone(prefill, t.tokens, now);
        return Nanos.plusSeconds(now, seconds);
    }

    /**
     * A request is worth a GPU only if its first token can still come before its deadline (the
     * client's, or the queue timeout): its prefill done as predicted, plus the margin predictions
     * have needed ({@link PredictionSlack}), plus, for a non-streamed request, its answer. One that
     * cannot is answered instead of being prefilled for a client about to leave. Without a
     * prediction, only the deadline itself is checked.
     */
    private boolean pastUsefulness(Ticket t, long predictedDone, long now, AdmissionConfig config) {
        long deadline = t.queueDeadline(t.enqueuedNanos, Nanos.of(config.queueTimeout()));
        if (now >= deadline) {
            return true;
        }
        if (predictedDone == 0) {
            return false;
        }
        double after = ledger.slack.seconds() + ledger.pace.seconds(t.answerTokens);
        return Nanos.plusSeconds(predictedDone, after) > deadline;
    }
}
