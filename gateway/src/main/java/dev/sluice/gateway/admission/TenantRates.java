package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Each tenant's token rate (prompt + completion tokens per minute): a bucket that refills
 * continuously. A request is admitted while the bucket is not in debt, and is charged its prompt
 * tokens when dispatched (work the GPUs will do) and its completion tokens when it ends; so the
 * request that empties the bucket still runs, and the tenant's next ones wait out the debt:
 * {@link #waitNanos} is the honest Retry-After.
 *
 * <p>The rate in force ({@link #limit}) is the configured {@code tokens_per_minute}, or with
 * coordination (docs/scale-out.md) this replica's lease of it: the bucket's size and its refill
 * rate are both the grant, so the replicas' buckets together never refill faster, nor hold more,
 * than the configured rate. A tenant without a lease here runs on rate / N. A shrunk grant clamps
 * the bucket at once (never adds tokens); a grown one only refills faster. For the leases it keeps
 * each rate-limited tenant's recent activity (tokens charged and refused), which {@link #demand}
 * reports at each renewal. Guarded by the admission lock.
 */
final class TenantRates {
    /** The rate in force for a tenant without a configured rate. */
    static final long NO_LIMIT = -1;
    /** A tenant with a grant of 0 here is told to come back after about a renewal. */
    private static final long NO_SHARE_WAIT_NANOS = 1_000_000_000L;
    /** Without a charge or a refusal for this long, a tenant's activity (and so its lease) is dropped. */
    static final long IDLE_NANOS = 30_000_000_000L;
    /** Consumption and refusals are smoothed over about this long (an exponential average). */
    private static final double SMOOTHING_NANOS = 5e9;

    private final Map<String, Bucket> buckets = new HashMap<>();
    private final Map<String, Activity> activity = new HashMap<>();
    private volatile TenantLimits limits;
    private FleetShares shares; // null: uncoordinated (the configured rates whole)

    TenantRates(TenantLimits limits) {
        this.limits = limits;
    }

    void reconfigure(TenantLimits next) {
        limits = next;
    }

    /** This replica's leases (coordination), or null: the configured rates whole. Buckets follow at their next refill. */
    void shares(FleetShares next) {
        shares = next;
    }

    /** The rate in force here, tokens per minute: {@link #NO_LIMIT}, or the configured one, or this replica's share of it. */
    long limit(String tenant) {
        long configured = limits.of(tenant).tokensPerMinute();
        if (configured <= 0) {
            return NO_LIMIT;
        }
        return shares == null ? configured : shares.tenantTokens(tenant, configured);
    }

    /** 0 when {@code tenant} may be admitted now, else how long until its bucket is out of debt. */
    long waitNanos(String tenant, long now) {
        long perMinute = limit(tenant);
        if (perMinute == NO_LIMIT) {
            return 0;
        }
        if (perMinute == 0) {
            return NO_SHARE_WAIT_NANOS; // no share here (yet): the next renewal may give one
        }
        double level = level(tenant, perMinute, now);
        return level >= 0 ? 0 : (long) Math.ceil(-level / perMinute * 60e9);
    }

    /** A request of the tenant's refused for its rate: demand this replica did not meet. */
    void refused(String tenant, long tokens, long now) {
        if (shares != null && limits.of(tenant).tokensPerMinute() > 0) {
            activity(tenant, now).refused += Math.max(0, tokens);
        }
    }

    /** Tokens left in the tenant's bucket now (its limit when it has none). */
    long remaining(String tenant, long now) {
        long perMinute = limit(tenant);
        return perMinute == NO_LIMIT ? Long.MAX_VALUE : (long) level(tenant, perMinute, now);
    }

    void charge(String tenant, long tokens, long now) {
        long perMinute = limit(tenant);
        if (perMinute == NO_LIMIT || tokens <= 0) {
            return;
        }
        bucket(tenant, perMinute, now).level -= tokens;
        if (shares != null) { // the activity is for the leases only
            activity(tenant, now).charged += tokens;
        }
    }

    private double level(String tenant, long perMinute, long now) {
        Bucket b = buckets.get(tenant);
        return b == null ? perMinute : b.refill(perMinute, now);
    }

    private Bucket bucket(String tenant, long perMinute, long now) {
        Bucket b = buckets.computeIfAbsent(tenant, k -> new Bucket(perMinute, now));
        b.refill(perMinute, now);
        return b;
    }

    private Activity activity(String tenant, long now) {
        Activity a = activity.computeIfAbsent(tenant, k -> new Activity(now));
        a.lastActive = now;
        return a;
    }

    private static final class Bucket {
        double level;
        long at;

        Bucket(double level, long at) {
            this.level = level;
            this.at = at;
        }

        /** Refilled at the rate in force, never above it: a smaller share clamps what was saved under a larger one. */
        double refill(long perMinute, long now) {
            level = Math.min(perMinute, level + (now - at) / 60e9 * perMinute);
            at = now;
            return level;
        }
    }

    /** What a tenant did here since the last {@link #demand}: tokens charged and refused, and its smoothed rate. */
    private static final class Activity {
        long charged;
        long refused;
        long lastActive;
        long since;
        double consumed = -1; // tokens per minute, smoothed; -1 before the first report
        double refusedRate = -1;

        Activity(long now) {
            this.since = now;
            this.lastActive = now;
        }
    }

    /**
     * The rate-limited tenants active here within {@link #IDLE_NANOS}, their rates since the last
     * call (which resets the counts), the busiest {@code max} first: only they are leased. A tenant
     * past the bound, or idle, runs on rate / N here (see docs/scale-out.md).
     */
    List<TenantDemand> demand(long now, int max) {
        List<TenantDemand> out = new ArrayList<>();
        activity.entrySet().removeIf(e -> {
            String tenant = e.getKey();
            Activity a = e.getValue();
            long configured = limits.of(tenant).tokensPerMinute();
            if (configured <= 0 || now - a.lastActive > IDLE_NANOS) {
                return true;
            }
            long elapsed = now - a.since;
            if (elapsed > 0) { // else asked twice at once: the same figures again
                // one renewal sees a request or none: smoothed, or the split would follow that noise
                double w = 1 - Math.exp(-elapsed / SMOOTHING_NANOS);
                a.consumed = smooth(a.consumed, a.charged * 60e9 / elapsed, w);
                a.refusedRate = smooth(a.refusedRate, a.refused * 60e9 / elapsed, w);
                a.charged = 0;
                a.refused = 0;
                a.since = now;
            }
            out.add(new TenantDemand(tenant, configured, Math.max(0, limit(tenant)), (long) Math.ceil(a.consumed),
                    (long) Math.ceil(a.refusedRate)));
            return false;
        });
        out.sort(Comparator.comparingLong((TenantDemand d) -> d.consumed() + d.refused()).reversed()
                .thenComparing(TenantDemand::tenant));
        return out.size() <= max ? out : List.copyOf(out.subList(0, max));
    }

    private static double smooth(double was, double sample, double weight) {
        return was < 0 ? sample : was + weight * (sample - was);
    }

    /** Forgets full buckets (a tenant at its limit is the same as one never seen) and idle tenants' activity: bounded memory. */
    void prune(long now) {
        activity.values().removeIf(a -> now - a.lastActive > IDLE_NANOS);
        buckets.entrySet().removeIf(e -> {
            long perMinute = limit(e.getKey());
            return perMinute == NO_LIMIT || e.getValue().refill(perMinute, now) >= perMinute;
        });
    }

    int tracked() {
        return buckets.size();
    }
}
