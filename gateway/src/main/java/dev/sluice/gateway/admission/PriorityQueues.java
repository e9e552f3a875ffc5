package dev.sluice.gateway.admission;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;

/**
 * The waiting room: one lane per priority class (index 0 is served first), and inside a lane one
 * queue per tenant, served round robin, so one tenant's burst cannot starve the others. A tenant's
 * queue is in order of deadlines (earliest first, arrival order among equals: {@code edf}) or of
 * arrival ({@code fifo}); a retried request goes to the very front either way. Beside the
 * lanes, the same tickets in order of their deadlines ({@link DeadlineHeap}), for the expiry
 * sweep, and each tenant's queued count and tokens over all classes, for tenant shares; both are
 * kept in step by every add and removal, so neither needs a walk of the queue. A tenant's queue is
 * an indexed sorted set ({@link TenantQueue}: a retry first, then deadline or arrival), and each
 * tenant queue knows its longest prompt: adding, removing, finding the longest and what is
 * served before a ticket ({@link #place}) cost O(log n), whatever the depth. The {@link Headroom}
 * bound is told of every change that can add work before a queued ticket. Not thread-safe: the
 * controller's lock guards it.
 */
final class PriorityQueues {
    private QueueLane[] lanes;
    private final DeadlineHeap deadlines = new DeadlineHeap();
    private final Headroom headroom = new Headroom();
    private final Map<String, long[]> tenantUse = new HashMap<>(); // tenant -> {queued, tokens}
    private long queueTimeoutNanos;
    private boolean edf;
    private long arrivals; // gives each added ticket its place among equals
    private long retries; // gives each ticket put back at the front its place there (the latest first)
    private int size;
    /** Tickets as they were queued, oldest first, until they commit ({@link #commitDue}); left ones skipped there. */
    private final java.util.ArrayDeque<Ticket> uncommitted = new java.util.ArrayDeque<>();

    /**
     * @param queueTimeoutNanos admission.queue_timeout: with the client's deadline, when a ticket's wait ends
     * @param edf               a tenant's queue in deadline order (else arrival order)
     */
    PriorityQueues(int classes, long queueTimeoutNanos, boolean edf) {
        lanes = lanes(classes);
        this.queueTimeoutNanos = queueTimeoutNanos;
        this.edf = edf;
    }

    private static QueueLane[] lanes(int classes) {
        QueueLane[] out = new QueueLane[classes];
        for (int i = 0; i < classes; i++) {
            out[i] = new QueueLane();
        }
        return out;
    }

    /**
     * A reload changed the priority classes: every waiting ticket keeps its place in the order it
     * would have been served, in the class {@code remap} gives it.
     */
    void reclassify(int classes, long nextTimeoutNanos, boolean nextEdf, java.util.function.ToIntFunction<Ticket> remap) {
        List<Ticket> waiting = drainInOrder();
        lanes = lanes(classes);
        queueTimeoutNanos = nextTimeoutNanos;
        edf = nextEdf;
        for (Ticket t : waiting) {
            t.priority = remap.applyAsInt(t);
            add(t);
        }
        headroom.invalidate();
    }

    /** A reload changed admission.queue_timeout: every waiting ticket's wait ends by the new one. */
    void queueTimeout(long nanos) {
        if (nanos != queueTimeoutNanos) {
            queueTimeoutNanos = nanos;
            deadlines.rekey(t -> t.queueDeadline(t.enqueuedNanos, nanos));
            resort();
        }
    }

    /** A reload changed admission.scheduling.order. */
    void order(boolean nextEdf) {
        if (nextEdf != edf) {
            edf = nextEdf;
            resort();
        }
    }

    /** A tenant's queue: retries first (the latest retry first), then by deadline ({@code edf}) or arrival. */
    private Comparator<Ticket> comparator() {
        Comparator<Ticket> retryFirst = Comparator.comparingLong(t -> t.frontRank);
        Comparator<Ticket> arrival = Comparator.comparingLong(t -> t.arrival);
        return edf ? retryFirst.thenComparingLong(t -> t.waitDeadline).thenComparing(arrival)
                : retryFirst.thenComparing(arrival);
    }

    private void resort() {
        headroom.invalidate();
        Comparator<Ticket> c = comparator();
        for (QueueLane lane : lanes) {
            lane.tenants.replaceAll((tenant, q) -> {
                TenantQueue sorted = new TenantQueue(c);
                for (Ticket x : q) { // one by one: the old set's order may no longer be the new one
                    sorted.add(x);
                }
                return sorted;
            });
        }
    }

    int size() {
        return size;
    }

    /** The bound on every queued ticket's headroom before its deadline (the judge's to start and read). */
    Headroom headroom() {
        return headroom;
    }

    int size(int priority) {
        return lanes[priority].size;
    }

    long tokens(int priority) {
        return lanes[priority].tokens;
    }

    /** Queued tokens of this class and every higher one: what is served before a newcomer of {@code priority}. */
    long tokensAtOrAbove(int priority) {
        long sum = 0;
        for (int i = 0; i <= priority && i < lanes.length; i++) {
            sum += lanes[i].tokens;
        }
        return sum;
    }

    /** Queues {@code t} at the back of its class; its wait is counted from {@link Ticket#enqueuedNanos}. */
    void add(Ticket t) {
        add(t, false);
    }

    /** Puts a ticket back at the very front of its class (a retry: it already waited its turn). */
    void addFirst(Ticket t) {
        add(t, true);
    }

    private void add(Ticket t, boolean front) {
        t.waitDeadline = t.queueDeadline(t.enqueuedNanos, queueTimeoutNanos);
        if (!front) {
            t.arrival = ++arrivals;
            t.frontRank = 0;
        } else {
            t.frontRank = -(++retries);
            t.committed = true; // it was admitted and sent once: a retry never gives way
        }
        if (!t.committed) {
            uncommitted.addLast(t);
        }
        QueueLane lane = lanes[t.priority];
        lane.add(t, front, comparator());
        if (front) {
            headroom.invalidate(); // it goes ahead of its whole class, and its tenant's turn comes first
        } else if (!isLast(t)) {
            // it is served before others: its prompt, and if it is not its tenant's last, the later ones of
            // its tenant move a round back, behind one more ticket of each other tenant of the class
            int others = lane.tenants.size() - 1;
            boolean tenantsLast = lane.tenants.get(t.tenant).last() == t;
            headroom.owe(t.tokens + (others > 0 && !tenantsLast ? others * lane.longest().tokens : 0));
        }
        size++;
        deadlines.add(t);
        long[] use = tenantUse.computeIfAbsent(t.tenant, k -> new long[2]);
        use[0]++;
        use[1] += t.tokens;
    }

    /** Bookkeeping of a ticket that left its lane. */
    private void left(Ticket t) {
        size--;
        deadlines.remove(t);
        long[] use = tenantUse.get(t.tenant);
        if (--use[0] == 0) {
            tenantUse.remove(t.tenant);
        } else {
            use[1] -= t.tokens;
        }
    }

    /** The ticket that would be served next, or null. */
    Ticket peek() {
        for (QueueLane lane : lanes) {
            if (lane.size > 0) {
                return lane.peek();
            }
        }
        return null;
    }

    /** Removes the ticket {@link #peek} returned and moves its tenant to the back of the rotation. */
    Ticket poll() {
        for (QueueLane lane : lanes) {
            if (lane.size > 0) {
                Ticket t = lane.poll();
                left(t);
                return t;
            }
        }
        return null;
    }

    /**
     * The tickets whose wait has ended by {@code now}, highest class first; they are out of the
     * deadline order but still in their lanes, for the caller to {@link #remove} one by one.
     * Reads only the due tickets.
     */
    List<Ticket> due(long now) {
        List<Ticket> out = new ArrayList<>(0);
        Ticket t;
        while ((t = deadlines.peek()) != null && now >= t.waitDeadline) {
            deadlines.remove(t);
            out.add(t);
        }
        out.sort(Comparator.comparingInt(x -> x.priority));
        return out;
    }

    /**
     * Whether {@code t} (queued) is the last the dispatcher would take: no lower class waits, no other
     * tenant shares its class, and its own tenant's queue ends with it. The usual newcomer under load
     * (one class, one deadline for all): what it waits behind is then the whole queue, known without a walk.
     */
    boolean isLast(Ticket t) {
        for (int i = t.priority + 1; i < lanes.length; i++) {
            if (lanes[i].size > 0) {
                return false;
            }
        }
        QueueLane lane = lanes[t.priority];
        TenantQueue q = lane.tenants.get(t.tenant);
        return lane.tenants.size() == 1 && q != null && q.last() == t;
    }

    /** What is served before queued {@code t}: O(tenants of its class x log n), no walk ({@link QueueLane#before}). */
    QueuePlace place(Ticket t) {
        QueuePlace p = new QueuePlace();
        for (int i = 0; i < t.priority; i++) {
            p.count += lanes[i].size;
            p.tokens += lanes[i].tokens;
        }
        lanes[t.priority].before(t, p);
        return p;
    }

    /** The longest queued prompt of class {@code priority} (the later arrival among equals), or null. */
    Ticket longestOf(int priority) {
        QueueLane lane = lanes[priority];
        return lane.longest();
    }

    /** As {@link #longestOf}, among the tickets that may still give way (not committed). */
    Ticket longestSheddableOf(int priority) {
        return lanes[priority].longestSheddable();
    }

    /**
     * Commits every ticket queued at least {@code afterNanos} before {@code now} ({@link Ticket#committed}):
     * from then on it is no candidate for shedding. Reads only the tickets that commit (and those
     * that left the queue meanwhile): O(log n) each, once per ticket. {@code afterNanos <= 0}: never.
     */
    void commitDue(long now, long afterNanos) {
        if (afterNanos <= 0) {
            uncommitted.clear();
            return;
        }
        Ticket t;
        // a ticket that left the queue (dispatched or ended) goes at once: held for the whole horizon, every
        // request of a busy gateway stayed reachable for 4 s (its exchange with it)
        while ((t = uncommitted.peekFirst()) != null && (gone(t) || now - t.enqueuedNanos >= afterNanos)) {
            uncommitted.pollFirst();
            if (!t.committed && !gone(t)) {
                lanes[t.priority].recommit(t);
            }
        }
    }

    private static boolean gone(Ticket t) {
        return t.state == Ticket.State.DISPATCHED || t.state == Ticket.State.ENDED;
    }

    /** Tickets still waiting to be committed or dropped from that list (tests: none held once dispatched). */
    int awaitingCommitment() {
        return uncommitted.size();
    }

    /**
     * Every queued ticket in the order the dispatcher would take them if nothing else arrived: class
     * by class, and inside a class the tenants' turns round robin from the one whose turn is next.
     */
    List<Ticket> serviceOrder() {
        List<Ticket> out = new ArrayList<>(size);
        for (QueueLane lane : lanes) {
            lane.serviceOrder(out);
        }
        return out;
    }

    /** Each tenant's queued count and tokens over all classes, as a fresh copy the caller may change. */
    Map<String, long[]> tenantUse() {
        Map<String, long[]> copy = new HashMap<>();
        tenantUse.forEach((k, v) -> copy.put(k, v.clone()));
        return copy;
    }

    /** Empties the queue, returning its tickets in the order they would have been served. */
    List<Ticket> drainInOrder() {
        List<Ticket> out = new ArrayList<>(size);
        Ticket t;
        while ((t = poll()) != null) {
            out.add(t);
        }
        return out;
    }

    boolean remove(Ticket t) {
        QueueLane lane = lanes[t.priority];
        if (lane.tenants.size() > 1) {
            // a later ticket of its tenant moves up a round: ahead of one more of the others
            headroom.owe(lane.longest().tokens);
        }
        if (lane.remove(t)) {
            left(t);
            return true;
        }
        return false;
    }

    /**
     * Tickets that may be pushed out for a newcomer of {@code priority}, in the order they should
     * go: lowest class first; inside a class, a ticket of whichever tenant has the most queued at
     * that point (so eviction, too, falls on the heaviest tenant first): its longest prompt with
     * {@code longestFirst} (the fewest requests give way for the room, and the shorter stay), else
     * its newest.
     */
    List<Ticket> evictionOrder(int priority, boolean longestFirst) {
        List<Ticket> order = new ArrayList<>();
        for (int i = lanes.length - 1; i > priority; i--) {
            Map<String, LinkedList<Ticket>> copy = new HashMap<>();
            // (a copy as a list: pollLast below takes from it)
            lanes[i].tenants.forEach((k, v) -> {
                LinkedList<Ticket> q = new LinkedList<>(v);
                if (longestFirst) {
                    q.sort(Ticket.LONGEST_FIRST.reversed()); // the longest last, where pollLast takes it
                }
                copy.put(k, q);
            });
            while (!copy.isEmpty()) {
                LinkedList<Ticket> busiest = null;
                String tenant = null;
                for (Map.Entry<String, LinkedList<Ticket>> e : copy.entrySet()) {
                    if (busiest == null || e.getValue().size() > busiest.size()) {
                        busiest = e.getValue();
                        tenant = e.getKey();
                    }
                }
                order.add(busiest.pollLast());
                if (busiest.isEmpty()) {
                    copy.remove(tenant);
                }
            }
        }
        return order;
    }

    /**
     * The longest queued prompt of {@code tenant} in class {@code priority} that is longer than
     * {@code tokens} and not committed (the later arrival among equals), or null: the one that gives way to a shorter
     * newcomer of its own class and tenant when there is no room (Moore–Hodgson's move at the door).
     */
    Ticket longestLongerThan(int priority, String tenant, long tokens) {
        TenantQueue q = lanes[priority].tenants.get(tenant);
        Ticket longest = q == null ? null : q.longestSheddable(); // indexed: no walk of the tenant's queue
        return longest != null && longest.tokens > tokens ? longest : null;
    }

    /** Every queued ticket, class by class (a copy: for the rare paths, tenant-share eviction and a drain). */
    List<Ticket> snapshot() {
        List<Ticket> all = new ArrayList<>(size);
        for (QueueLane lane : lanes) {
            lane.tenants.values().forEach(all::addAll);
        }
        return all;
    }

    /** Queued count per tenant of one class (for the admin view). */
    Map<String, Integer> tenantsOf(int priority) {
        Map<String, Integer> out = new HashMap<>();
        lanes[priority].tenants.forEach((k, v) -> out.put(k, v.size()));
        return out;
    }
}
