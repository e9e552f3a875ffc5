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
    private volatile AdmissionConfig config; // the limits decided with: fleet's, or this replica's share of them; under the lock
    private volatile AdmissionConfig fleet; // as configured (reloads included); the whole fleet's with coordination
    private FleetShares shares; // this replica's share (coordination), or null: the configured limits whole; under the lock
    private boolean sharesExpire; // the share holds until sharesValidUntil (a lease), then nothing; under the lock
    private long sharesValidUntil;
    private final WorkerSet workers;
    private final AdmissionObserver observer;
    private final LongSupplier clock;
    private final Decisions decisions = new Decisions();
    private PriorityQueues queue; // under the lock; rebuilt when a reload changes the priority classes
    private final PrefillLedger ledger;
    private final WorkerWindows windows;
    private final TenantRates rates; // per-tenant token buckets, under the lock
    private final Dispatcher dispatcher;
    private final PrefillRates prefill; // each prefill worker's rate and work in prefill
    private long lastPrune;
    private long lastReview;
    private boolean reviewDue; // something changed since the last review: the rate, the work ahead, the queue
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
        this(config, workers, observer, clock, new WorkerWindows.Routing(prefillPolicy, decodePolicy,
                decided::decided, staleNanos));
    }

    /** Told of every routing decision that led to a dispatch (for {@code sluice_routing_decisions_total}). */
    public interface RoutingObserver {
        void decided(WorkerRole role, RoutingPolicy policy, String reason);
    }

    private AdmissionController(AdmissionConfig config, WorkerSet workers, AdmissionObserver observer, LongSupplier clock,
                                WorkerWindows.Routing routing) {
        this.config = config;
        this.fleet = config;
        this.workers = workers;
        this.observer = observer;
        this.clock = clock;
        this.queue = new PriorityQueues(config.priorities().size(), Nanos.of(config.queueTimeout()), edf(config));
        this.prefill = new PrefillRates(workers, config.prefillRate(), config.initialPrefillTokensPerSecond(), Map.of());
        this.ledger = new PrefillLedger(prefill);
        this.windows = new WorkerWindows(config, workers, routing, prefill);
        this.rates = new TenantRates(config.tenantLimits());
        this.dispatcher = new Dispatcher(workers, windows, rates, ledger, observer);
    }

    /** The configured limits (reloads included): with coordination, the whole fleet's, not this replica's share. */
    public AdmissionConfig config() {
        return fleet;
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
            sharesExpire = expires && next != null;
            sharesValidUntil = validUntilNanos;
            shares = next;
            config = next == null ? fleet : next.applyTo(fleet);
            windows.shares(next);
            rates.shares(next);
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
            if (!next.priorities().equals(config.priorities())) {
                // new classes: every waiting request keeps its place in the order it would have been
                // served, in the class of the same name, or the new default class when its is gone
                List<Ticket> waiting = queue.drainInOrder();
                List<String> old = config.priorities();
                queue = new PriorityQueues(next.priorities().size(), timeout, edf(next));
                for (Ticket t : waiting) {
                    t.priority = remap(old, next, t.priority);
                    queue.add(t);
                }
            } else {
                queue.queueTimeout(timeout);
                queue.order(edf(next));
            }
            fleet = next;
            config = shares == null ? next : shares.applyTo(next);
            prefill.reconfigure(next.prefillRate(), next.initialPrefillTokensPerSecond());
            reviewDue = true;
            windows.reconfigure(next);
            rates.reconfigure(next.tenantLimits());
        });
        kick();
    }

    /** A class index of the {@code old} list in {@code next}'s: same name, else {@code next}'s default. */
    private static int remap(List<String> old, AdmissionConfig next, int index) {
        int i = index >= 0 && index < old.size() ? next.priorityIndex(old.get(index)) : -1;
        return i >= 0 ? i : next.priorityIndex(next.defaultPriority());
    }

    /**
     * Admits, queues or rejects. Returns the rejection when the answer is an immediate no; else
     * null, and the listener hears {@code granted} (maybe before this returns) or, later,
     * {@code rejected}.
     */
    public Rejection submit(Ticket t) {
        Rejection r = atTheDoor(t);
        if (r == null) {
            r = decisions.decide(after -> admit(t, after));
        }
        if (r != null) {
            observer.rejected(t, r.reason());
        } else if (t.watch != null) {
            decisions.act(after -> reportQueue(t, after)); // its first queue update, at once
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
            double window = prefill.known() ? config.prefillMaxInflightTime().toNanos() / 1e9 : 0;
            QueueStatus.report(queue.serviceOrder(), only, prefill.remainingTokens(now), prefill.clusterRate(),
                    ledger.lead.seconds(window), after);
        }
    }

    /** The refusals that need none of the locked state: draining, no worker to serve it, a prompt too large. */
    private Rejection atTheDoor(Ticket t) {
        AdmissionConfig config = this.config;
        if (draining) {
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
    private Rejection admit(Ticket t, After after) {
        long now = clock.getAsLong();
        fenceLapsedShares(now);
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
        queue.add(t); // in its place (its class, its tenant's turn, its deadline), to see what is ahead of it
        List<Forecast.Late> late = prefill.known() ? forecast(now).late(queue.serviceOrder(), shedLongest())
                : List.of();
        for (Forecast.Late l : late) {
            if (l.ticket() == t) {
                queue.remove(t); // the others' fate is judged again without it, at the next review
                return l.shed() ? Rejections.shed(config, t, now, l.tokensAhead() / rate)
                        : Rejections.deadlineUnreachable(config, (long) l.tokensAhead(), rate, l.predictedSeconds());
            }
        }
        evict(room, t, now, after);
        notServed(late, now, after); // it goes ahead of these (a higher class, an earlier deadline, a shorter prompt)
        t.state = Ticket.State.QUEUED;
        ledger.pending(t);
        dispatch(after, now);
        if (passThroughOnly && t.state == Ticket.State.QUEUED) {
            removeQueued(t); // it would have to wait, and there is no room to wait in
            t.state = Ticket.State.ENDED;
            return Rejections.queueFull(config, prefill.remainingTokens(now) / rate);
        }
        return null;
    }

    /** A forecast from now: what the prefill workers still hold, at the cluster's rate. */
    private Forecast forecast(long now) {
        return new Forecast(now, prefill.remainingTokens(now), prefill.clusterRate(), ledger.pace,
                ledger.slack.seconds());
    }

    private void evict(EvictionPlan room, Ticket newcomer, long now, After after) {
        if (room.victims.isEmpty()) {
            return; // the usual case: no second walk of the queue
        }
        // the victims' Retry-After: the newcomer's own predicted wait
        double waitSeconds = forecast(now).until(queue.serviceOrder(), newcomer);
        for (int i = 0; i < room.victims.size(); i++) {
            Ticket v = room.victims.get(i);
            removeQueued(v);
            v.state = Ticket.State.ENDED; // under the lock: a concurrent release must see it as ended
            tell(after, v, i < room.byPriority ? Rejections.evictedByPriority(config, waitSeconds)
                    : i < room.byPriority + room.byLength ? Rejections.shed(config, v, now, waitSeconds)
                    : Rejections.evictedByShare(config, v, newcomer, waitSeconds));
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
        return decisions.decide(after -> {
            ledger.pace.observed(decodeSeconds, tokens);
            boolean wasQueued = t.state == Ticket.State.QUEUED;
            long now = clock.getAsLong();
            switch (t.state) {
                case QUEUED -> removeQueued(t);
                case DISPATCHED -> {
                    releasePrefill(t, now, false);
                    windows.decodeEnded(t.decode);
                    ledger.undispatched();
                }
                default -> {
                    return false;
                }
            }
            t.state = Ticket.State.ENDED;
            dispatch(after, now);
            return wasQueued;
        });
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
        return decisions.decide(after -> {
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
            windows.decodeEnded(t.decode);
            ledger.undispatched();
            failed.forEach(t::avoid);
            t.prefill = null;
            t.decode = null;
            t.state = Ticket.State.QUEUED;
            if (t.priority >= config.priorities().size()) {
                t.priority = config.priorityIndex(config.defaultPriority()); // dispatched before fewer classes were loaded
            }
            t.enqueuedNanos = now; // admission.queue_timeout bounds each wait for a pair
            queue.addFirst(t);
            dispatch(after, now);
            return true;
        });
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
        double rate = decisions.read(() -> {
            if (t.prefill == null) {
                return prefill.known() ? prefill.clusterRate() : prefill.clusterRate() / GUESS_SLACK;
            }
            double r = prefill.rateOf(t.prefill);
            return prefill.sourceOf(t.prefill) == PrefillRates.Source.GUESS ? r / GUESS_SLACK : r;
        });
        return (long) (t.windowTokensAtDispatch / rate * 1e9);
    }

    /** How much slower than the guessed rate a worker may be before its prefill counts as stalled. */
    static final double GUESS_SLACK = 4;

    /** Runs the dispatcher (a worker became routable again). */
    public void kick() {
        decisions.act(after -> dispatch(after, clock.getAsLong()));
    }

    /** The prefill is done (first token seen, or the prefill half finished): its tokens stop being pending. */
    public void prefillDone(Ticket t) {
        decisions.act(after -> {
            if (t.state == Ticket.State.DISPATCHED && !t.prefillReleased) {
                long now = clock.getAsLong();
                releasePrefill(t, now, true);
                dispatch(after, now);
            }
        });
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
                removeQueued(t);
                t.state = Ticket.State.ENDED;
                tell(after, t, Rejections.queueTimeout(config, t, now, t.waitDeadline,
                        queue.tokensAtOrAbove(t.priority) / prefill.clusterRate()));
            }
            if (reviewDue || now - lastReview >= config.scheduling().reviewInterval().toNanos()) {
                review(after, now);
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
                tell(after, t, new Rejection(reason, message, 1));
            }
        });
    }

    /** Prompt tokens the prefill windows hold as still to compute (the affinity wait's measure): 0 when idle. */
    long prefillUncachedHeld() {
        return decisions.read(windows::uncachedHeld);
    }

    public AdmissionSnapshot snapshot() {
        return decisions.read(() -> {
            int classes = config.priorities().size();
            int[] depth = new int[classes];
            List<Map<String, Integer>> tenants = new ArrayList<>();
            for (int i = 0; i < classes; i++) {
                depth[i] = queue.size(i);
                tenants.add(queue.tenantsOf(i));
            }
            return new AdmissionSnapshot(queue.size(), depth, tenants, ledger.pendingTokens(), ledger.inPrefillTokens(),
                    ledger.dispatched(), prefill.clusterRate(), prefill.known(), draining, windows.snapshot(),
                    prefill.view(), ledger.slack.seconds());
        });
    }

    // ---- internals, all under the lock ----

    /** Under the lock: a leased share past its time is no share at all (see {@link #applyShares(FleetShares, long)}). */
    private void fenceLapsedShares(long now) {
        if (sharesExpire && now - sharesValidUntil >= 0) {
            sharesExpire = false;
            shares = FleetShares.none();
            config = shares.applyTo(fleet);
            windows.shares(shares);
            rates.shares(shares);
        }
    }

    private void dispatch(After after, long now) {
        fenceLapsedShares(now);
        dispatcher.dispatch(queue, config, now, after);
        reviewDue = true; // every event ends here: the rate, the work ahead or the queue may have changed
    }

    /**
     * Re-judges every queued request: walked in the order it will be served, with what the prefill
     * workers still hold ahead of it, each one whose first token can no longer come before its
     * deadline is answered now (429 {@code deadline_unreachable}), rather than at its deadline, and
     * stops counting as work ahead of the others. Off while the rates are only guessed.
     */
    private void review(After after, long now) {
        lastReview = now;
        reviewDue = false;
        if (queue.size() == 0 || !prefill.known()) {
            return;
        }
        notServed(forecast(now).late(queue.serviceOrder(), shedLongest()), now, after);
    }

    /** Answers the queued requests a forecast says are not to be served. */
    private void notServed(List<Forecast.Late> late, long now, After after) {
        double rate = prefill.clusterRate();
        for (Forecast.Late l : late) {
            Ticket t = l.ticket();
            if (t.state != Ticket.State.QUEUED) {
                continue; // evicted meanwhile: it has its answer
            }
            removeQueued(t);
            t.state = Ticket.State.ENDED;
            tell(after, t, l.shed() ? Rejections.shed(config, t, now, l.tokensAhead() / rate)
                    : Rejections.noLongerReachable(config, t, now, l.tokensAhead(), rate, l.predictedSeconds()));
        }
    }

    private boolean shedLongest() {
        return config.scheduling().shed() == AdmissionConfig.Shed.LONGEST;
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

    private void removeQueued(Ticket t) {
        if (queue.remove(t)) {
            ledger.notPending(t);
        }
    }

    private void tell(After after, Ticket t, Rejection r) {
        Rejections.tell(after, observer, t, r);
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
