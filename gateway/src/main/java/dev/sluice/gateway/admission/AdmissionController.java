package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Requests wait here, not in a GPU server's queue. Bounded in count ({@code max_queued_requests})
 * and in pending prompt tokens ({@code max_pending_tokens}: queued plus in prefill), with a
 * deadline; each prefill worker gets only a window of requests and tokens at a time, each decode
 * worker a cap on streams. A request is pending from admission until its prefill is done.
 *
 * <p>All state sits behind one lock ({@link Decisions}), held only for the decision itself: what
 * needs no shared state is done before it (the checks at the door, the prefix key's preparation
 * when the ticket is built), and listeners are called after it is released, on each ticket's own
 * executor (its event loop).
 */
public final class AdmissionController {
    private final LimitsInForce limits; // the configured limits, or this replica's share of them
    private final WorkerSet workers;
    private final AdmissionObserver observer;
    private final LongSupplier clock;
    private final Decisions decisions = new Decisions();
    private final PriorityQueues queue; // under the lock
    private final PrefillLedger ledger;
    private final WorkerWindows windows;
    private final TenantRates rates; // per-tenant token buckets, under the lock
    private final Dispatcher dispatcher;
    private final PrefillRates prefill; // each prefill worker's rate and work in prefill
    private final QueueJudge judge;
    private final Door door;
    private final TicketEnds ends;
    private long lastPrune;
    private long lastReview;
    /**
     * Something changed since the last review that can make a queued request late before its
     * review_interval is up: a measured rate, a request put back ahead of the others, new limits.
     * Not a dispatch, a release or a newcomer at the end of the queue: they take no time from anyone.
     */
    private boolean reviewDue;
    private volatile boolean draining; // read at the door, before the lock

    public AdmissionController(AdmissionConfig config, WorkerSet workers, AdmissionObserver observer, LongSupplier clock) {
        this(config, workers, observer, clock, WorkerWindows.Routing.roundRobin());
    }

    /**
     * @param prefillPolicy and {@code decodePolicy} choose among the workers with room; {@code
     *                      decided} hears each decision that led to a dispatch; telemetry older than
     *                      {@code staleNanos} is unknown to them
     */
    public AdmissionController(AdmissionConfig config, WorkerSet workers, AdmissionObserver observer, LongSupplier clock,
                               RoutingPolicy prefillPolicy, RoutingPolicy decodePolicy, RoutingObserver decided,
                               long staleNanos) {
        this(config, workers, observer, clock, new WorkerWindows.Routing(prefillPolicy, decodePolicy, decided,
                staleNanos));
    }

    private AdmissionController(AdmissionConfig config, WorkerSet workers, AdmissionObserver observer, LongSupplier clock,
                                WorkerWindows.Routing routing) {
        this.workers = workers;
        this.observer = observer;
        this.clock = clock;
        this.queue = new PriorityQueues(config.priorities().size(), Nanos.of(config.queueTimeout()), edf(config));
        this.prefill = new PrefillRates(workers, config.prefillRate(), config.initialPrefillTokensPerSecond(), Map.of());
        this.ledger = new PrefillLedger(prefill);
        this.windows = new WorkerWindows(config, workers, routing, prefill);
        this.rates = new TenantRates(config.tenantLimits());
        this.dispatcher = new Dispatcher(workers, windows, rates, ledger, observer);
        this.limits = new LimitsInForce(config, windows, rates);
        this.judge = new QueueJudge(prefill, ledger, observer);
        Door.Host host = new Door.Host() {
            @Override
            public void dispatch(After after, long now) {
                AdmissionController.this.dispatch(after, now);
            }

            @Override
            public void reviewDue() {
                reviewDue = true;
            }
        };
        this.door = new Door(limits, workers, clock, () -> draining, queue, ledger, prefill, rates, judge, host);
        this.ends = new TicketEnds(limits, clock, queue, ledger, windows, judge, host);
    }

    /** The configured limits (reloads included): with coordination, the whole fleet's, not this replica's share. */
    public AdmissionConfig config() {
        return limits.fleet();
    }

    /**
     * This replica's share of the fleet's limits (coordination): the queue bound, the pending-token
     * budget and each worker's window hold it for every decision from now on. As with a reload,
     * nothing admitted is dropped: a shrunk share only stops new admissions until the work already
     * in drains below it; queues and rates are untouched. Null: back to the configured limits whole.
     */
    public void applyShares(FleetShares next) {
        applyShares(next, false, 0);
    }

    /**
     * As {@link #applyShares(FleetShares)}, for a share leased until {@code validUntilNanos} (this
     * clock): past that instant, every decision runs on nothing (no admission, no dispatch) until the
     * next share is applied. The holder fences itself here, at each decision, not in a timer: after a
     * pause of the process, the first request decided sees the lease gone before any renewal ran.
     */
    public void applyShares(FleetShares next, long validUntilNanos) {
        applyShares(next, true, validUntilNanos);
    }

    private void applyShares(FleetShares next, boolean expires, long validUntilNanos) {
        decisions.update(() -> {
            limits.share(next, expires, validUntilNanos);
            reviewDue = true;
        });
        kick();
    }

    /** A worker added by a reload: a window of its own before routing can see it. */
    public void addWorker(Worker w) {
        decisions.update(() -> windows.add(w));
    }

    /** A worker removed by a reload, drained: its (empty) window goes. */
    public void removeWorker(Worker w) {
        decisions.update(() -> {
            windows.remove(w);
            prefill.remove(w);
        });
    }

    /** Rates measured by an earlier run (the state file), by worker URL: priors where nothing better is known. */
    public void savedRates(Map<String, Double> byUrl) {
        decisions.update(() -> prefill.saved(byUrl));
    }

    public PrefillCalibrationTarget calibration() { // the calibration's way in
        return new PrefillCalibrationTarget(decisions, prefill, () -> reviewDue = true, this::kick);
    }

    /** The prefill rates measured so far, by worker URL (for the state file). */
    public Map<String, Double> measuredRates() {
        return decisions.read(prefill::measuredByUrl);
    }

    private static boolean edf(AdmissionConfig c) {
        return c.scheduling().order() == AdmissionConfig.QueueOrder.EDF;
    }

    /**
     * A reloaded configuration: new limits hold for every decision from now on. Nothing admitted
     * is dropped: a lowered limit only stops new admissions until the work already in drains below
     * it; a raised one may let queued requests go at once. The priority classes cannot change
     * while requests are queued under their indexes: a different class list is refused.
     */
    public void reconfigure(AdmissionConfig next) {
        decisions.update(() -> {
            long timeout = Nanos.of(next.queueTimeout());
            if (!next.priorities().equals(inForce().priorities())) {
                // new classes: every waiting request keeps its place in the order it would have been
                // served, in the class of the same name, or the new default class when its is gone
                List<String> old = inForce().priorities();
                queue.reclassify(next.priorities().size(), timeout, edf(next), t -> next.remapPriority(old, t.priority));
            } else {
                queue.queueTimeout(timeout);
                queue.order(edf(next));
            }
            limits.configured(next);
            prefill.reconfigure(next.prefillRate(), next.initialPrefillTokensPerSecond());
            reviewDue = true;
            windows.reconfigure(next);
            rates.reconfigure(next.tenantLimits());
        });
        kick();
    }

    /**
     * Admits, queues or rejects. Returns the rejection when the answer is an immediate no; else
     * null, and the listener hears {@code granted} (maybe before this returns) or, later,
     * {@code rejected}.
     */
    public Rejection submit(Ticket t) {
        Rejection r = door.atTheDoor(t);
        if (r == null) {
            r = decisions.decide(after -> {
                Rejection no = door.admit(t, after);
                if (no == null && t.watch != null) {
                    reportQueue(t, after); // its first queue update, at once (under the same hold of the lock)
                }
                return no;
            });
        }
        if (r != null) {
            observer.rejected(t, r.reason());
        }
        return r;
    }

    /** Tells each queued request that asked for queue updates where it stands; call about once a second. */
    public void reportQueue() {
        decisions.act(after -> reportQueue(null, after));
    }

    /** Under the lock: {@link QueueStatus} for every watched ticket, or only {@code only} if it is still queued. */
    private void reportQueue(Ticket only, After after) {
        if (queue.size() > 0 && (only == null || only.state == Ticket.State.QUEUED)) {
            long now = clock.getAsLong();
            // before a dispatch has shown the lead: the window in time, which binds only once the rates are known
            double window = prefill.known() ? inForce().prefillMaxInflightTime().toNanos() / 1e9 : 0;
            double remaining = prefill.remainingTokens(now);
            double lead = ledger.lead.seconds(window);
            if (only != null) {
                QueueStatus.report(only, queue.place(only), remaining, prefill.clusterRate(), lead, after);
            } else {
                QueueStatus.report(queue.serviceOrder(), remaining, prefill.clusterRate(), lead, after);
            }
        }
    }

    /**
     * The client left, or the request ended: give back whatever it holds. Idempotent.
     *
     * @return true if the ticket was still queued (it will never be granted)
     */
    public boolean release(Ticket t) {
        return release(t, 0, 0);
    }

    /**
     * As {@link #release(Ticket)}, for a request that ended well having generated {@code tokens}
     * tokens in {@code decodeSeconds} after its prefill was done: the decode pace learns from it under
     * the same lock (non-streamed requests' deadline checks add it).
     */
    public boolean release(Ticket t, double decodeSeconds, long tokens) {
        return decisions.decide(after -> ends.release(t, decodeSeconds, tokens, after));
    }

    /**
     * An attempt failed in a way that is safe to retry: the request gives back its pair (the
     * prefill window and the decode slot) but keeps its one ticket and its pending tokens, and
     * goes back to the front of its class to be paired again, away from {@code failed} where
     * another pair fits. The listener hears {@code granted} again (or {@code rejected} at its
     * deadline), exactly as the first time.
     *
     * @return false if the ticket was not dispatched (already ended): nothing changed
     */
    public boolean requeue(Ticket t, List<Worker> failed) {
        return decisions.decide(after -> ends.requeue(t, failed, after));
    }

    /** The prefill is done (first token seen, or the prefill half finished): its tokens stop being pending. */
    public void prefillDone(Ticket t) {
        decisions.act(after -> ends.prefillDone(t, after));
    }

    /**
     * How long the ticket's prefill should take: the prompt tokens its prefill worker had to get
     * through when it was dispatched (its own included) at that worker's rate (measured, else its
     * prior). The stall watchdog allows a multiple of this. A rate that is only the guess
     * ({@code initial_prefill_tokens_per_second}) may be wrong by several times: it is divided by
     * {@link #GUESS_SLACK} here, so that a slow but healthy first prefill is not taken for a stall
     * (and retried, its work thrown away) before anything is known of the worker.
     */
    public long expectedPrefillNanos(Ticket t) {
        double rate = decisions.read(() -> prefill.expectedRate(t.prefill, GUESS_SLACK));
        return (long) (t.windowTokensAtDispatch / rate * 1e9);
    }

    /** How much slower than the guessed rate a worker may be before its prefill counts as stalled. */
    static final double GUESS_SLACK = 4;

    /** Whether the ticket's stream, with no first token, may wait in its decode for a slot ({@link DecodeStarts}). */
    public boolean decodeWaitingForSlot(Ticket t, long graceNanos) {
        return decisions.read(() -> t.state == Ticket.State.DISPATCHED && t.decodeStartSlot >= 0
                && windows.waitingForSlot(t.decode, t.ranks.decodeRank(), clock.getAsLong(), graceNanos));
    }

    /** The ticket's decode gave its first token (reported only while {@link Ticket#awaitsDecodeStart}). */
    public void decodeStarted(Ticket t) {
        decisions.update(() -> windows.decodeStarted(t));
    }

    /** Runs the dispatcher (a worker became routable again). */
    public void kick() {
        decisions.act(after -> dispatch(after, clock.getAsLong()));
    }

    /**
     * Expires queued tickets past their deadline and re-judges the rest; call periodically (every
     * few tens of ms), from any thread. Expiry reads only the tickets that are due (the queue keeps
     * them in deadline order). The review ({@link #review}) walks the queue once: at once when
     * something changed since the last one, else every {@code admission.scheduling.review_interval}.
     */
    public void expire() {
        decisions.act(after -> {
            long now = clock.getAsLong();
            for (Ticket t : queue.due(now)) {
                judge.removeQueued(queue, t);
                t.state = Ticket.State.ENDED;
                judge.tell(after, t, Rejections.queueTimeout(inForce(), t, now, t.waitDeadline,
                        queue.tokensAtOrAbove(t.priority) / prefill.clusterRate()));
            }
            queue.commitDue(now, Nanos.of(inForce().scheduling().shedCommitAfter()));
            if (reviewDue || now - lastReview >= Nanos.of(inForce().scheduling().reviewInterval())) {
                lastReview = now;
                reviewDue = false;
                judge.review(queue, inForce(), now, after);
            }
            dispatch(after, now);
            if (now - lastPrune > 1_000_000_000L) {
                rates.prune(now);
                lastPrune = now;
            }
        });
    }

    /** A request generated {@code tokens} tokens in {@code seconds} after its prefill was done (tests). */
    void decodePace(double seconds, long tokens) {
        decisions.update(() -> ledger.pace.observed(seconds, tokens));
    }

    /** A request ended having generated {@code tokens}: its tenant's token rate is charged for them. */
    public void completionTokens(String tenant, long tokens) {
        decisions.update(() -> rates.charge(tenant, tokens, clock.getAsLong()));
    }

    /** Tokens left in a tenant's per-minute bucket (Long.MAX_VALUE without a rate limit). */
    public long tokensRemaining(String tenant) {
        return decisions.read(() -> rates.remaining(tenant, clock.getAsLong()));
    }

    /**
     * The rate-limited tenants active here lately, the busiest {@code max} first, with what they used
     * and were refused since the last call (coordination: their token-rate leases). Resets the counts.
     */
    public List<TenantDemand> tenantDemand(int max) {
        return decisions.read(() -> rates.demand(clock.getAsLong(), max));
    }

    /** Stops admitting; queued requests stay until they are served or expire. */
    public void drain() {
        draining = true;
    }

    /** Rejects everything still queued (end of a drain's grace period). */
    public void rejectQueued(RejectReason reason, String message) {
        decisions.act(after -> {
            for (Ticket t : queue.drainInOrder()) {
                ledger.notPending(t);
                t.state = Ticket.State.ENDED;
                judge.tell(after, t, new Rejection(reason, message, 1));
            }
        });
    }

    /** Prompt tokens the prefill windows hold as still to compute (the affinity wait's measure): 0 when idle. */
    long prefillUncachedHeld() {
        return decisions.read(windows::uncachedHeld);
    }

    public AdmissionSnapshot snapshot() {
        return decisions.read(() -> {
            int classes = inForce().priorities().size();
            int[] depth = new int[classes];
            List<Map<String, Integer>> tenants = new ArrayList<>();
            for (int i = 0; i < classes; i++) {
                depth[i] = queue.size(i);
                tenants.add(queue.tenantsOf(i));
            }
            return new AdmissionSnapshot(queue.size(), depth, tenants, ledger.pendingTokens(), ledger.inPrefillTokens(),
                    ledger.dispatched(), prefill.clusterRate(), prefill.known(), draining, windows.snapshot(),
                    prefill.view(), ledger.slack.seconds(), judge.doorSpread());
        });
    }

    // ---- internals, all under the lock ----

    /** Under the lock: a leased share past its time is no share at all (see {@link #applyShares(FleetShares, long)}). */
    private void fenceLapsedShares(long now) {
        limits.fenceLapsed(now);
    }

    private void dispatch(After after, long now) {
        fenceLapsedShares(now);
        dispatcher.dispatch(queue, inForce(), now, after);
    }

    /** The limits decisions are made with now (this replica's share, or the configured limits). */
    private AdmissionConfig inForce() {
        return limits.config();
    }
}
