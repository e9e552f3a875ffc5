package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Room for a newcomer when the queue ({@code max_queued_requests}) or the pending-token budget
 * ({@code max_pending_tokens}) is full: first queued requests of lower classes, never the reverse
 * ({@link PriorityQueues#evictionOrder}); then, still short and under {@code scheduling.shed:
 * longest}, one prompt of the newcomer's own class and tenant at least {@link #DOOR_FACTOR} times as
 * long (one for one: the count held
 * stays, the work ahead shrinks, which is how the most requests make their deadlines when a burst
 * of mixed sizes meets the limits before any rate is known); then the newest requests of tenants
 * over their share ({@link TenantShares}). Only a plan: nothing leaves the queue until the
 * controller has decided to admit the newcomer. Made under the admission lock.
 */
final class EvictionPlan {
    private static final EvictionPlan NONE = new EvictionPlan(List.of(), 0, 0, 0);
    /**
     * A queued prompt gives way at the door only to one at most half its length: among prompts of
     * about the same size a swap gains nothing worth a 429 to the one that came first (bench-replicas'
     * burst of ±10% prompts swapped 33 places for nothing).
     */
    static final long DOOR_FACTOR = 2;

    /** Who gives way: lower classes first, then a longer prompt of the newcomer's class, then tenants over their share. */
    final List<Ticket> victims;
    /** How many of {@link #victims} (the first ones) go for a higher class. */
    final int byPriority;
    /** How many after those (0 or 1) give way to a shorter prompt of their own class ({@code shed}); the rest for tenant shares. */
    final int byLength;
    /** Pending tokens the victims give back. */
    final long freedTokens;

    private EvictionPlan(List<Ticket> victims, int byPriority, int byLength, long freedTokens) {
        this.victims = victims;
        this.byPriority = byPriority;
        this.byLength = byLength;
        this.freedTokens = freedTokens;
    }

    static EvictionPlan plan(Ticket t, PriorityQueues queue, long pendingTokens, AdmissionConfig config) {
        int queued = queue.size();
        if (queued < config.maxQueuedRequests() && pendingTokens + t.tokens <= config.maxPendingTokens()) {
            return NONE; // the usual case: room in both
        }
        List<Ticket> victims = new ArrayList<>();
        long freed = 0;
        List<Ticket> candidates = null;
        while (noRoom(queue, pendingTokens, freed, t, victims.size(), config)) {
            if (candidates == null) {
                candidates = queue.evictionOrder(t.priority, longest(config));
            }
            if (victims.size() == candidates.size()) {
                break;
            }
            Ticket v = candidates.get(victims.size());
            victims.add(v);
            freed += v.tokens;
        }
        int byPriority = victims.size();
        int byLength = 0;
        if (longest(config) && noRoom(queue, pendingTokens, freed, t, victims.size(), config)) {
            Ticket v = queue.longestLongerThan(t.priority, t.tenant, DOOR_FACTOR * t.tokens - 1);
            // one for one, and only when that one makes the room (a prompt longer than the newcomer's
            // frees its tokens unless the budget was already overrun, say by a lowered limit)
            if (v != null && !noRoom(queue, pendingTokens, freed + v.tokens, t, victims.size() + 1, config)) {
                victims.add(v);
                freed += v.tokens;
                byLength = 1;
            }
        }
        int needSlots = queued - victims.size() - config.maxQueuedRequests() + 1;
        long needTokens = pendingTokens - freed + t.tokens - config.maxPendingTokens();
        if ((needSlots > 0 && queued > 0) || needTokens > 0) {
            Map<String, long[]> use = queue.tenantUse();
            for (Ticket v : victims) {
                long[] u = use.get(v.tenant);
                u[0]--;
                u[1] -= v.tokens;
            }
            List<Ticket> chosen = victims;
            for (Ticket v : TenantShares.victims(t, use, () -> rest(queue, chosen), config, Math.max(0, needSlots),
                    Math.max(0, needTokens))) {
                victims.add(v);
                freed += v.tokens;
            }
        }
        return new EvictionPlan(victims, byPriority, byLength, freed);
    }

    private static boolean longest(AdmissionConfig config) {
        return config.scheduling().shed() == AdmissionConfig.Shed.LONGEST;
    }

    /** Whether the newcomer still finds no room after {@code evicted} tickets giving back {@code freed} tokens. */
    private static boolean noRoom(PriorityQueues queue, long pendingTokens, long freed, Ticket t, int evicted,
                                 AdmissionConfig config) {
        return queue.size() - evicted >= config.maxQueuedRequests()
                || pendingTokens - freed + t.tokens > config.maxPendingTokens();
    }

    /** The queued tickets not already chosen to give way for a higher class. */
    private static List<Ticket> rest(PriorityQueues queue, List<Ticket> victims) {
        List<Ticket> rest = queue.snapshot();
        rest.removeAll(victims);
        return rest;
    }

    /** Whether the queue would still have no room to wait in after the evictions. */
    boolean queueStaysFull(PriorityQueues queue, AdmissionConfig config) {
        return queue.size() - victims.size() >= config.maxQueuedRequests();
    }

    /** Whether the newcomer's tokens would still overrun the pending-token budget after the evictions. */
    boolean overBudget(Ticket t, long pendingTokens, AdmissionConfig config) {
        return pendingTokens - freedTokens + t.tokens > config.maxPendingTokens();
    }
}
