package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Room for a newcomer when the queue ({@code max_queued_requests}) or the pending-token budget
 * ({@code max_pending_tokens}) is full: first queued requests of lower classes, never the reverse
 * ({@link PriorityQueues#evictionOrder}); then, still short, the newest requests of tenants over
 * their share ({@link TenantShares}). Only a plan: nothing leaves the queue until the controller
 * has decided to admit the newcomer. Made under the admission lock.
 */
final class EvictionPlan {
    private static final EvictionPlan NONE = new EvictionPlan(List.of(), 0, 0);

    /** Who gives way, lower classes first, then tenants over their share. */
    final List<Ticket> victims;
    /** How many of {@link #victims} (the first ones) go for a higher class; the rest for tenant shares. */
    final int byPriority;
    /** Pending tokens the victims give back. */
    final long freedTokens;

    private EvictionPlan(List<Ticket> victims, int byPriority, long freedTokens) {
        this.victims = victims;
        this.byPriority = byPriority;
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
        while (queued - victims.size() >= config.maxQueuedRequests()
                || pendingTokens - freed + t.tokens > config.maxPendingTokens()) {
            if (candidates == null) {
                candidates = queue.evictionOrder(t.priority);
            }
            if (victims.size() == candidates.size()) {
                break;
            }
            Ticket v = candidates.get(victims.size());
            victims.add(v);
            freed += v.tokens;
        }
        int byPriority = victims.size();
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
        return new EvictionPlan(victims, byPriority, freed);
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
