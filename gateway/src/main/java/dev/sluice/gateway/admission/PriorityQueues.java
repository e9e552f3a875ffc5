package dev.sluice.gateway.admission;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The waiting room: one lane per priority class (index 0 is served first), and inside a lane one
 * FIFO per tenant, served round robin, so one tenant's burst cannot starve the others. Not
 * thread-safe: the controller's lock guards it.
 */
final class PriorityQueues {
    private final Lane[] lanes;
    private int size;

    PriorityQueues(int classes) {
        lanes = new Lane[classes];
        for (int i = 0; i < classes; i++) {
            lanes[i] = new Lane();
        }
    }

    int size() {
        return size;
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

    void add(Ticket t) {
        lanes[t.priority].add(t, false);
        size++;
    }

    /** Puts a ticket back at the very front of its class (a retry: it already waited its turn). */
    void addFirst(Ticket t) {
        lanes[t.priority].add(t, true);
        size++;
    }

    /** The ticket that would be served next, or null. */
    Ticket peek() {
        for (Lane lane : lanes) {
            if (lane.size > 0) {
                return lane.peek();
            }
        }
        return null;
    }

    /** Removes the ticket {@link #peek} returned and moves its tenant to the back of the rotation. */
    Ticket poll() {
        for (Lane lane : lanes) {
            if (lane.size > 0) {
                size--;
                return lane.poll();
            }
        }
        return null;
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
        if (lanes[t.priority].remove(t)) {
            size--;
            return true;
        }
        return false;
    }

    /**
     * Tickets that may be pushed out for a newcomer of {@code priority}, in the order they should
     * go: lowest class first; inside a class, the newest ticket of whichever tenant has the most
     * queued at that point (so eviction, too, falls on the heaviest tenant first).
     */
    List<Ticket> evictionOrder(int priority) {
        List<Ticket> order = new ArrayList<>();
        for (int i = lanes.length - 1; i > priority; i--) {
            Map<String, ArrayDeque<Ticket>> copy = new HashMap<>();
            lanes[i].tenants.forEach((k, v) -> copy.put(k, new ArrayDeque<>(v)));
            while (!copy.isEmpty()) {
                ArrayDeque<Ticket> busiest = null;
                String tenant = null;
                for (Map.Entry<String, ArrayDeque<Ticket>> e : copy.entrySet()) {
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

    List<Ticket> snapshot() {
        List<Ticket> all = new ArrayList<>(size);
        for (Lane lane : lanes) {
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

    private static final class Lane {
        final Map<String, ArrayDeque<Ticket>> tenants = new HashMap<>();
        final ArrayDeque<String> rotation = new ArrayDeque<>();
        int size;
        long tokens;

        void add(Ticket t, boolean front) {
            ArrayDeque<Ticket> q = tenants.get(t.tenant);
            if (q == null) {
                q = new ArrayDeque<>();
                tenants.put(t.tenant, q);
                rotation.addLast(t.tenant);
            }
            if (front) {
                q.addFirst(t);
                rotation.remove(t.tenant);
                rotation.addFirst(t.tenant);
            } else {
                q.addLast(t);
            }
            size++;
            tokens += t.tokens;
        }

        Ticket peek() {
            return tenants.get(rotation.peekFirst()).peekFirst();
        }

        Ticket poll() {
            String tenant = rotation.pollFirst();
            ArrayDeque<Ticket> q = tenants.get(tenant);
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
            ArrayDeque<Ticket> q = tenants.get(t.tenant);
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
}
