package dev.sluice.gateway.admission;

import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * One priority class's waiting tickets: a queue per tenant (a retry first, then deadline or
 * arrival, indexed: {@link TenantQueue}) and the tenants' turns round robin. Its count and tokens
 * are kept in step; its longest prompt is the longest of its tenants' (each indexed). Under the admission lock, through
 * {@link PriorityQueues}.
 */
final class QueueLane {
    final Map<String, TenantQueue> tenants = new HashMap<>();
    final ArrayDeque<String> rotation = new ArrayDeque<>();
    int size;
    long tokens;

    void add(Ticket t, boolean front, Comparator<Ticket> order) {
        TenantQueue q = tenants.get(t.tenant);
        if (q == null) {
            q = new TenantQueue(order);
            tenants.put(t.tenant, q);
            rotation.addLast(t.tenant);
        }
        q.add(t);
        if (front) {
            rotation.remove(t.tenant);
            rotation.addFirst(t.tenant);
        }
        size++;
        tokens += t.tokens;
    }

    /** Appends this lane's tickets in service order: tenants' turns round robin, each tenant's queue in order. */
    void serviceOrder(List<Ticket> out) {
        ArrayDeque<String> turns = new ArrayDeque<>(rotation);
        Map<String, Iterator<Ticket>> next = new HashMap<>();
        while (!turns.isEmpty()) {
            String tenant = turns.pollFirst();
            Iterator<Ticket> it = next.computeIfAbsent(tenant, k -> tenants.get(k).iterator());
            out.add(it.next());
            if (it.hasNext()) {
                turns.addLast(tenant);
            }
        }
    }

    /**
     * Adds what this lane serves before {@code t} (queued here) to {@code place}. The tenants' turns
     * are rounds: the k-th ticket of each tenant is served in round k, the tenants of a round in
     * rotation order. So before the r-th ticket of its tenant come the first r of every tenant, and
     * the (r+1)-th of those ahead of its tenant in the rotation: one indexed prefix per tenant,
     * O(tenants of the class x log n), never a walk of the tickets.
     */
    void before(Ticket t, QueuePlace place) {
        TenantQueue own = tenants.get(t.tenant);
        int round = own.rank(t);
        boolean ownPassed = false;
        for (String tenant : rotation) {
            if (tenant.equals(t.tenant)) {
                own.first(round, place);
                ownPassed = true;
            } else {
                TenantQueue q = tenants.get(tenant);
                q.first(Math.min(q.size(), ownPassed ? round : round + 1), place);
            }
        }
    }

    /** The longest queued prompt here (the later arrival among equals), or null: O(tenants). */
    Ticket longest() {
        Ticket longest = null;
        for (TenantQueue q : tenants.values()) {
            longest = TenantQueue.longer(longest, q.longest());
        }
        return longest;
    }

    /** The longest queued prompt here that is not committed, or null: O(tenants). */
    Ticket longestSheddable() {
        Ticket longest = null;
        for (TenantQueue q : tenants.values()) {
            longest = TenantQueue.longer(longest, q.longestSheddable());
        }
        return longest;
    }

    /** {@code t} became committed ({@link TenantQueue#recommit}); false: it is not queued here. */
    boolean recommit(Ticket t) {
        TenantQueue q = tenants.get(t.tenant);
        return q != null && q.recommit(t);
    }

    Ticket peek() {
        return tenants.get(rotation.peekFirst()).first();
    }

    Ticket poll() {
        String tenant = rotation.pollFirst();
        TenantQueue q = tenants.get(tenant);
        Ticket t = q.pollFirst();
        if (q.isEmpty()) {
            tenants.remove(tenant);
        } else {
            rotation.addLast(tenant);
        }
        size--;
        tokens -= t.tokens;
        return t;
    }

    boolean remove(Ticket t) {
        TenantQueue q = tenants.get(t.tenant);
        if (q == null || !q.remove(t)) {
            return false;
        }
        if (q.isEmpty()) {
            tenants.remove(t.tenant);
            rotation.remove(t.tenant);
        }
        size--;
        tokens -= t.tokens;
        return true;
    }
}
