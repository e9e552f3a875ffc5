package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Work-conserving tenant shares of the queue and of the pending-token budget. A tenant may fill
 * idle capacity, but when the queue (or the budget) is full and a tenant still under its share
 * arrives, the newest waiting requests of the tenants furthest over their shares give way, never
 * one of a higher class than the newcomer's. So one tenant's burst fills the queue only until
 * someone else needs it, and then loses its newest requests, not the others their place.
 * Computed when the queue or budget is full: from each tenant's totals, which the queue keeps, and
 * only when some tenant is over its share (evicting), from the queued tickets themselves.
 *
 * <p>With coordination the shares are fractions of this replica's lease of the queue and budget
 * (what {@code config} holds here): a tenant's shares over the fleet add up to its fraction of the
 * fleet's limits, and a newcomer can only displace what waits on its own replica
 * (docs/scale-out.md, "Tenant shares of the queue").
 */
final class TenantShares {
    private TenantShares() {
    }

    /**
     * Victims for {@code newcomer}, given the queued tickets not already chosen: enough to bring the
     * queue to {@code needSlots} fewer tickets and its tokens {@code needTokens} lower, or as many as
     * shares allow; empty when the newcomer is itself at or over its share of what is short.
     *
     * @param use    tenant -> {queued count, queued tokens} of those tickets; changed here
     * @param queued the tickets themselves, asked for only when someone is over its share
     */
    static List<Ticket> victims(Ticket newcomer, Map<String, long[]> use, Supplier<List<Ticket>> queued,
                                AdmissionConfig config, int needSlots, long needTokens) {
        TenantLimits limits = config.tenantLimits();
        long[] mine = use.getOrDefault(newcomer.tenant, new long[2]);
        var own = limits.of(newcomer.tenant);
        // a tenant with nothing waiting here is under any share: its first request is its due
        boolean underQueueShare = mine[0] == 0 || mine[0] + 1 <= own.maxQueueShare() * config.maxQueuedRequests();
        boolean underTokenShare = mine[0] == 0
                || mine[1] + newcomer.tokens <= own.maxPendingShare() * config.maxPendingTokens();
        if ((needSlots > 0 && !underQueueShare) || (needTokens > 0 && !underTokenShare)) {
            return List.of();
        }
        if (!anyOverShare(newcomer, use, config, needSlots, needTokens)) {
            return List.of(); // the common case under overload: nobody to evict, no need to look at the tickets
        }
        // each other tenant's newest tickets first, of the newcomer's class or lower
        Map<String, List<Ticket>> byTenant = new HashMap<>();
        for (Ticket t : queued.get()) {
            if (!t.tenant.equals(newcomer.tenant) && t.priority >= newcomer.priority) {
                byTenant.computeIfAbsent(t.tenant, k -> new ArrayList<>()).add(t);
            }
        }
        byTenant.values().forEach(l -> l.sort(Comparator.comparingLong((Ticket t) -> t.enqueuedNanos).reversed()));
        List<Ticket> out = new ArrayList<>();
        int slots = needSlots;
        long tokens = needTokens;
        while (slots > 0 || tokens > 0) {
            String worst = null;
            double worstExcess = 0;
            for (Map.Entry<String, List<Ticket>> e : byTenant.entrySet()) {
                if (e.getValue().isEmpty()) {
                    continue;
                }
                double excess = excess(e.getKey(), use.get(e.getKey()), config, slots, tokens);
                if (excess > 1.0 && excess > worstExcess) {
                    worst = e.getKey();
                    worstExcess = excess;
                }
            }
            if (worst == null) {
                break; // nobody is over their share: the newcomer waits its turn like everyone
            }
            Ticket v = byTenant.get(worst).remove(0);
            long[] u = use.get(worst);
            u[0]--;
            u[1] -= v.tokens;
            out.add(v);
            slots--;
            tokens -= v.tokens;
        }
        return out;
    }

    /** Whether a tenant other than the newcomer's is over its share of what is short (then it may have to give way). */
    private static boolean anyOverShare(Ticket newcomer, Map<String, long[]> use, AdmissionConfig config, int slots,
                                        long tokens) {
        for (Map.Entry<String, long[]> e : use.entrySet()) {
            if (!e.getKey().equals(newcomer.tenant) && excess(e.getKey(), e.getValue(), config, slots, tokens) > 1.0) {
                return true;
            }
        }
        return false;
    }

    /**
     * How far over its share a tenant is, as a fraction of the limit being short. One waiting
     * request is never over: with a small queue or budget (a replica's lease of the fleet's, docs/
     * scale-out.md) a share can be less than one request, and two tenants would evict each other's
     * only request in turn.
     */
    private static double excess(String tenant, long[] use, AdmissionConfig config, int slots, long tokens) {
        if (use[0] <= 1) {
            return Math.min(1.0, rawExcess(tenant, use, config, slots, tokens));
        }
        return rawExcess(tenant, use, config, slots, tokens);
    }

    private static double rawExcess(String tenant, long[] use, AdmissionConfig config, int slots, long tokens) {
        var l = config.tenantLimits().of(tenant);
        return Math.max(slots > 0 ? use[0] / (l.maxQueueShare() * config.maxQueuedRequests()) : 0,
                tokens > 0 ? use[1] / (l.maxPendingShare() * config.maxPendingTokens()) : 0);
    }
}
