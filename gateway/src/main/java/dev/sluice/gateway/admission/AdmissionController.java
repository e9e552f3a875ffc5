package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * Requests wait here, not in a GPU server's queue. Bounded in count ({@code max_queued_requests})
 * and in pending prompt tokens ({@code max_pending_tokens}: queued plus in prefill), with a
 * deadline; each prefill worker gets only a window of requests and tokens at a time, each decode
 * worker a cap on streams. A request is pending from admission until its prefill is done.
 *
 * <p>All state sits behind one lock held for microseconds; listeners are called after it is
 * released, on each ticket's own executor (its event loop).
 */
public final class AdmissionController {
    private volatile AdmissionConfig config; // replaced whole by reconfigure, read under the lock
    private final WorkerSet workers;
    private final AdmissionObserver observer;
    private final LongSupplier clock;
    private final ReentrantLock lock = new ReentrantLock();
    private PriorityQueues queue; // under the lock; rebuilt when a reload changes the priority classes
    private final PrefillThroughput throughput;
    private final WorkerWindows windows;
    private long pendingTokens;
    private final TenantRates rates; // per-tenant token buckets, under the lock
    private long lastPrune;
    private long inflightPrefillTokens;
    private int dispatched;
    private boolean draining;

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
        this.workers = workers;
        this.observer = observer;
        this.clock = clock;
        this.queue = new PriorityQueues(config.priorities().size());
        this.throughput = new PrefillThroughput(config.initialPrefillTokensPerSecond(), 10.0);
        this.windows = new WorkerWindows(config, workers, routing);
        this.rates = new TenantRates(config.tenantLimits());
    }

    public AdmissionConfig config() {
        return config;
    }

    /** A worker added by a reload: a window of its own before routing can see it. */
    public void addWorker(Worker w) {
        lock.lock();
        try {
            windows.add(w);
        } finally {
            lock.unlock();
        }
    }

    /** A worker removed by a reload, drained: its (empty) window goes. */
    public void removeWorker(Worker w) {
        lock.lock();
        try {
            windows.remove(w);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A reloaded configuration: new limits hold for every decision from now on. Nothing admitted
     * is dropped: a lowered limit only stops new admissions until the work already in drains below
     * it; a raised one may let queued requests go at once. The priority classes cannot change
     * while requests are queued under their indexes: a different class list is refused.
     */
    public void reconfigure(AdmissionConfig next) {
        lock.lock();
        try {
            if (!next.priorities().equals(config.priorities())) {
                // new classes: every waiting request keeps its place in the order it would have been
                // served, in the class of the same name, or the new default class when its is gone
                List<Ticket> waiting = queue.drainInOrder();
                List<String> old = config.priorities();
                queue = new PriorityQueues(next.priorities().size());
                for (Ticket t : waiting) {
                    t.priority = remap(old, next, t.priority);
                    queue.add(t);
                }
            }
            config = next;
            windows.reconfigure(next);
            rates.reconfigure(next.tenantLimits());
        } finally {
            lock.unlock();
        }
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
        List<Runnable> actions = new ArrayList<>(2);
        Rejection r;
        lock.lock();
        try {
            r = admit(t, actions);
        } finally {
            lock.unlock();
        }
        actions.forEach(Runnable::run);
        if (r != null) {
            observer.rejected(t, r.reason());
        }
        return r;
    }

    private Rejection admit(Ticket t, List<Runnable> actions) {
        long now = clock.getAsLong();
        if (draining) {
            return reject(RejectReason.DRAINING, "the gateway is draining for shutdown; retry on another instance", 1);
        }
        if (!anyAvailable(workers.prefill()) || !anyAvailable(workers.decode())) {
            return reject(RejectReason.NO_CAPACITY, "no available " + (anyAvailable(workers.prefill()) ? "decode" : "prefill")
                    + " worker", seconds(config.retryAfterMin().toSeconds()));
        }
        if (t.tokens > config.maxRequestTokens()) {
            return new Rejection(RejectReason.REQUEST_TOO_LARGE, "the prompt has about " + t.tokens
                    + " tokens; admission.max_request_tokens is " + config.maxRequestTokens(), 0);
        }
        long rateWait = rates.waitNanos(t.tenant, now);
        if (rateWait > 0) {
            return reject(RejectReason.TENANT_RATE_LIMITED, "tenant " + t.tenant + " used its admission.tenant_limits "
                    + "tokens_per_minute=" + config.tenantLimits().of(t.tenant).tokensPerMinute() + " (prompt + "
                    + "completion tokens); it refills in " + (rateWait / 1_000_000) + " ms", seconds(rateWait / 1e9));
        }
        double rate = throughput.tokensPerSecond();
        // make room by evicting lower-priority queued requests, never the reverse
        List<Ticket> victims = new ArrayList<>();
        long freedTokens = 0;
        List<Ticket> candidates = null;
        while (queue.size() - victims.size() >= config.maxQueuedRequests()
                || pendingTokens - freedTokens + t.tokens > config.maxPendingTokens()) {
            if (candidates == null) {
                candidates = queue.evictionOrder(t.priority);
            }
            if (victims.size() == candidates.size()) {
                break;
            }
            Ticket v = candidates.get(victims.size());
            victims.add(v);
            freedTokens += v.tokens;
        }
        // still short: tenants over their share give way to a newcomer under its share (same class or lower)
        int victimsByPriority = victims.size();
        int needSlots = queue.size() - victims.size() - config.maxQueuedRequests() + 1;
        long needTokens = pendingTokens - freedTokens + t.tokens - config.maxPendingTokens();
        if ((needSlots > 0 && queue.size() > 0) || needTokens > 0) {
            List<Ticket> rest = queue.snapshot();
            rest.removeAll(victims);
            for (Ticket v : TenantShares.victims(t, rest, config, Math.max(0, needSlots), Math.max(0, needTokens))) {
                victims.add(v);
                freedTokens += v.tokens;
            }
        }
        // With nobody waiting, a request that a window can take now never waits: it passes even when
        // the queue has no room (max_queued_requests: 0 means "never wait", not "never serve").
        boolean passThroughOnly = queue.size() - victims.size() >= config.maxQueuedRequests();
        if (passThroughOnly && queue.size() > 0) {
            return queueFull(rate);
        }
        if (pendingTokens - freedTokens + t.tokens > config.maxPendingTokens()) {
            long excess = pendingTokens + t.tokens - config.maxPendingTokens();
            return reject(RejectReason.TOKEN_BUDGET_EXCEEDED, pendingTokens + " prompt tokens are pending and this request "
                    + "has about " + t.tokens + "; admission.max_pending_tokens is " + config.maxPendingTokens(),
                    seconds(excess / rate));
        }
        long ahead = queue.tokensAtOrAbove(t.priority) + inflightPrefillTokens;
        // predicted time to first token: what is ahead of it, then its own prefill
        double predictedWait = (ahead + t.tokens) / rate;
        long deadline = Math.min(t.deadlineNanos, now + config.queueTimeout().toNanos());
        if (throughput.measured() && now + (long) (predictedWait * 1e9) > deadline) {
            return reject(RejectReason.DEADLINE_UNREACHABLE, String.format(
                    "about %d prompt tokens are ahead at %.0f tokens/s: its first token would come in %.1f s, "
                            + "past the deadline", ahead, rate, predictedWait), seconds(predictedWait));
        }
        for (int i = 0; i < victims.size(); i++) {
            Ticket v = victims.get(i);
            removeQueued(v);
            v.state = Ticket.State.ENDED; // under the lock: a concurrent release must see it as ended
            Rejection evicted = i < victimsByPriority
                    ? new Rejection(RejectReason.EVICTED, "evicted from the queue by a higher-priority request",
                            seconds(ahead / rate))
                    : new Rejection(RejectReason.TENANT_SHARE, "evicted from the queue: tenant " + v.tenant + " held more "
                            + "than its admission.tenant_limits share while tenant " + t.tenant + " (under its share) "
                            + "arrived", seconds(ahead / rate));
            actions.add(() -> notifyRejected(v, evicted));
        }
        t.state = Ticket.State.QUEUED;
        t.enqueuedNanos = now;
        queue.add(t);
        pendingTokens += t.tokens;
        dispatch(actions, now);
        if (passThroughOnly && t.state == Ticket.State.QUEUED) {
            removeQueued(t); // it would have to wait, and there is no room to wait in
            t.state = Ticket.State.ENDED;
            return queueFull(rate);
        }
        return null;
    }

    private Rejection queueFull(double rate) {
        return reject(RejectReason.QUEUE_FULL, "the queue holds admission.max_queued_requests="
                + config.maxQueuedRequests() + " requests", seconds(inflightPrefillTokens / rate));
    }

    /**
     * The client left, or the request ended: give back whatever it holds. Idempotent.
     *
     * @return true if the ticket was still queued (it will never be granted)
     */
    public boolean release(Ticket t) {
        List<Runnable> actions = new ArrayList<>(2);
        boolean wasQueued;
        lock.lock();
        try {
            long now = clock.getAsLong();
            wasQueued = t.state == Ticket.State.QUEUED;
            switch (t.state) {
                case QUEUED -> removeQueued(t);
                case DISPATCHED -> {
                    releasePrefill(t, now, false);
                    windows.decodeEnded(t.decode);
                    dispatched--;
                }
                default -> {
                    return false;
                }
            }
            t.state = Ticket.State.ENDED;
            dispatch(actions, now);
        } finally {
            lock.unlock();
        }
        actions.forEach(Runnable::run);
        return wasQueued;
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
        List<Runnable> actions = new ArrayList<>(2);
        lock.lock();
        try {
            if (t.state != Ticket.State.DISPATCHED) {
                return false;
            }
            long now = clock.getAsLong();
            if (t.prefillReleased) {
                pendingTokens += t.tokens; // it will be prefilled again
            } else {
                windows.prefillDone(t.prefill, t.tokens);
                inflightPrefillTokens -= t.tokens;
                if (inflightPrefillTokens == 0) {
                    throughput.busy(false, now);
                }
            }
            t.prefillReleased = false;
            windows.decodeEnded(t.decode);
            dispatched--;
            failed.forEach(t::avoid);
            t.prefill = null;
            t.decode = null;
            t.state = Ticket.State.QUEUED;
            if (t.priority >= config.priorities().size()) {
                t.priority = config.priorityIndex(config.defaultPriority()); // dispatched before fewer classes were loaded
            }
            t.enqueuedNanos = now; // admission.queue_timeout bounds each wait for a pair
            queue.addFirst(t);
            dispatch(actions, now);
        } finally {
            lock.unlock();
        }
        actions.forEach(Runnable::run);
        return true;
    }

    /**
     * How long the ticket's prefill should take: the prompt tokens its prefill worker had to get
     * through when it was dispatched (its own included) at the measured prefill rate. The stall
     * watchdog allows a multiple of this.
     */
    public long expectedPrefillNanos(Ticket t) {
        lock.lock();
        try {
            return (long) (t.windowTokensAtDispatch / throughput.tokensPerSecond() * 1e9);
        } finally {
            lock.unlock();
        }
    }

    /** Runs the dispatcher (a worker became routable again). */
    public void kick() {
        List<Runnable> actions = new ArrayList<>(2);
        lock.lock();
        try {
            dispatch(actions, clock.getAsLong());
        } finally {
            lock.unlock();
        }
        actions.forEach(Runnable::run);
    }

    /** The prefill is done (first token seen, or the prefill half finished): its tokens stop being pending. */
    public void prefillDone(Ticket t) {
        List<Runnable> actions = new ArrayList<>(2);
        lock.lock();
        try {
            if (t.state != Ticket.State.DISPATCHED || t.prefillReleased) {
                return;
            }
            long now = clock.getAsLong();
            releasePrefill(t, now, true);
            dispatch(actions, now);
        } finally {
            lock.unlock();
        }
        actions.forEach(Runnable::run);
    }

    /** Expires queued tickets past their deadline; call periodically. */
    public void expire() {
        List<Runnable> actions = new ArrayList<>();
        lock.lock();
        try {
            long now = clock.getAsLong();
            for (Ticket t : queue.snapshot()) {
                long deadline = Math.min(t.deadlineNanos, t.enqueuedNanos + config.queueTimeout().toNanos());
                if (now >= deadline) {
                    removeQueued(t);
                    t.state = Ticket.State.ENDED;
                    long waitedMs = (now - t.enqueuedNanos) / 1_000_000;
                    Rejection r = new Rejection(RejectReason.QUEUE_TIMEOUT, "waited " + waitedMs + " ms in the queue ("
                            + (t.deadlineNanos <= deadline ? "the client's deadline" : "admission.queue_timeout") + ")",
                            seconds(queue.tokensAtOrAbove(t.priority) / throughput.tokensPerSecond()));
                    actions.add(() -> notifyRejected(t, r));
                }
            }
            dispatch(actions, now);
            if (now - lastPrune > 1_000_000_000L) {
                rates.prune(now);
                lastPrune = now;
            }
        } finally {
            lock.unlock();
        }
        actions.forEach(Runnable::run);
    }

    /** A request ended having generated {@code tokens}: its tenant's token rate is charged for them. */
    public void completionTokens(String tenant, long tokens) {
        lock.lock();
        try {
            rates.charge(tenant, tokens, clock.getAsLong());
        } finally {
            lock.unlock();
        }
    }

    /** Tokens left in a tenant's per-minute bucket (Long.MAX_VALUE without a rate limit). */
    public long tokensRemaining(String tenant) {
        lock.lock();
        try {
            return rates.remaining(tenant, clock.getAsLong());
        } finally {
            lock.unlock();
        }
    }

    /** Stops admitting; queued requests stay until they are served or expire. */
    public void drain() {
        lock.lock();
        try {
            draining = true;
        } finally {
            lock.unlock();
        }
    }

    /** Rejects everything still queued (end of a drain's grace period). */
    public void rejectQueued(RejectReason reason, String message) {
        List<Runnable> actions = new ArrayList<>();
        lock.lock();
        try {
            for (Ticket t : queue.snapshot()) {
                removeQueued(t);
                t.state = Ticket.State.ENDED;
                Rejection r = new Rejection(reason, message, 1);
                actions.add(() -> notifyRejected(t, r));
            }
        } finally {
            lock.unlock();
        }
        actions.forEach(Runnable::run);
    }

    public AdmissionSnapshot snapshot() {
        lock.lock();
        try {
            int classes = config.priorities().size();
            int[] depth = new int[classes];
            List<Map<String, Integer>> tenants = new ArrayList<>();
            for (int i = 0; i < classes; i++) {
                depth[i] = queue.size(i);
                tenants.add(queue.tenantsOf(i));
            }
            Map<String, int[]> perWorker = windows.snapshot();
            return new AdmissionSnapshot(queue.size(), depth, tenants, pendingTokens, inflightPrefillTokens, dispatched,
                    throughput.tokensPerSecond(), throughput.measured(), draining, perWorker);
        } finally {
            lock.unlock();
        }
    }

    // ---- internals, all under the lock ----

    private void dispatch(List<Runnable> actions, long now) {
        Ticket head;
        while ((head = queue.peek()) != null) {
            Worker p;
            Worker d;
            if (head.direct) {
                d = windows.pickDirectDecode(head); // a short prompt the decode prefills itself
                p = d;
            } else {
                p = windows.pickPrefill(head);
                // a unified worker (disaggregation: none) is its own decode; pickPrefill checked its stream room
                d = p == null ? null : workers.unified() ? p : windows.pickDecode(head);
            }
            if (p == null || d == null) {
                return; // strict order: the head waits for room, nobody overtakes it
            }
            // a half-open worker takes a limited number of trial requests
            if (!p.takeForNewRequest()) {
                return;
            }
            if (d != p && !d.takeForNewRequest()) {
                p.returnTrial();
                return;
            }
            queue.poll();
            if (pastUsefulness(head, now)) {
                Ticket late = head;
                long waitedMs = (now - late.enqueuedNanos) / 1_000_000;
                pendingTokens -= late.tokens;
                late.state = Ticket.State.ENDED;
                Rejection r = new Rejection(RejectReason.QUEUE_TIMEOUT, "waited " + waitedMs + " ms; its first token "
                        + "could no longer come before its deadline, so it was not sent to a worker",
                        seconds(inflightPrefillTokens / throughput.tokensPerSecond()));
                actions.add(() -> notifyRejected(late, r));
                continue;
            }
            if (inflightPrefillTokens == 0) {
                throughput.busy(true, now);
            }
            windows.dispatched(p, d, head.tokens);
            windows.routed(head);
            head.windowTokensAtDispatch = windows.windowTokens(p);
            inflightPrefillTokens += head.tokens;
            dispatched++;
            head.state = Ticket.State.DISPATCHED;
            if (!head.rateCharged) {
                rates.charge(head.tenant, head.tokens, now); // its prompt: once, however often it is retried
                head.rateCharged = true;
            }
            head.prefill = p;
            head.decode = d;
            head.dispatchedNanos = now;
            Ticket granted = head;
            actions.add(() -> {
                observer.dispatched(granted);
                granted.executor.execute(() -> granted.listener.granted(p, d));
            });
        }
    }

    /**
     * A request is worth a GPU only if its first token can still come before its deadline (the
     * client's, or the queue timeout): the prefill work in flight plus its own, at the measured
     * rate. One that cannot is answered instead of being prefilled for a client about to leave.
     */
    private boolean pastUsefulness(Ticket t, long now) {
        long deadline = deadlineOf(t);
        if (now >= deadline) {
            return true;
        }
        if (!throughput.measured()) {
            return false;
        }
        double seconds = (inflightPrefillTokens + t.tokens) / throughput.tokensPerSecond();
        return now + (long) (seconds * 1e9) > deadline;
    }

    private long deadlineOf(Ticket t) {
        return Math.min(t.deadlineNanos, t.enqueuedNanos + config.queueTimeout().toNanos());
    }

    private void releasePrefill(Ticket t, long now, boolean completed) {
        if (t.prefillReleased) {
            return;
        }
        t.prefillReleased = true;
        windows.prefillDone(t.prefill, t.tokens);
        inflightPrefillTokens -= t.tokens;
        pendingTokens -= t.tokens;
        if (completed) {
            throughput.completed(t.tokens, now);
        }
        if (inflightPrefillTokens == 0) {
            throughput.busy(false, now);
        }
    }

    private void removeQueued(Ticket t) {
        if (queue.remove(t)) {
            pendingTokens -= t.tokens;
        }
    }

    /** Outside the lock; the caller has already ended the ticket under it. */
    private void notifyRejected(Ticket t, Rejection r) {
        observer.rejected(t, r.reason());
        t.executor.execute(() -> t.listener.rejected(r));
    }

    private static boolean anyAvailable(List<Worker> list) {
        for (Worker w : list) {
            if (w.acceptsNewRequests()) { // a suspect worker with its probe permit free takes the probe
                return true;
            }
        }
        return false;
    }

    private Rejection reject(RejectReason reason, String message, long retryAfter) {
        return new Rejection(reason, message, retryAfter);
    }

    /** Retry-After in whole seconds, clamped to the configured range. */
    private long seconds(double s) {
        long min = Math.max(1, config.retryAfterMin().toSeconds());
        long max = Math.max(min, config.retryAfterMax().toSeconds());
        return Math.max(min, Math.min(max, (long) Math.ceil(s)));
    }
}
