package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import java.util.HashMap;
import java.util.Map;

/**
 * Each tenant's token rate (prompt + completion tokens per minute): a bucket of
 * {@code tokens_per_minute} that refills continuously. A request is admitted while the bucket is
 * not in debt, and is charged its prompt tokens when dispatched (work the GPUs will do) and its
 * completion tokens when it ends; so the request that empties the bucket still runs, and the
 * tenant's next ones wait out the debt: {@link #waitNanos} is the honest Retry-After. Guarded by
 * the admission lock.
 */
final class TenantRates {
    private final Map<String, Bucket> buckets = new HashMap<>();
    private volatile TenantLimits limits;

    TenantRates(TenantLimits limits) {
        this.limits = limits;
    }

    void reconfigure(TenantLimits next) {
        limits = next;
    }

    /** 0 when {@code tenant} may be admitted now, else how long until its bucket is out of debt. */
    long waitNanos(String tenant, long now) {
        long perMinute = limits.of(tenant).tokensPerMinute();
        if (perMinute <= 0) {
            return 0;
        }
        double level = level(tenant, perMinute, now);
        return level >= 0 ? 0 : (long) Math.ceil(-level / perMinute * 60e9);
    }

    /** Tokens left in the tenant's bucket now (its limit when it has none). */
    long remaining(String tenant, long now) {
        long perMinute = limits.of(tenant).tokensPerMinute();
        return perMinute <= 0 ? Long.MAX_VALUE : (long) level(tenant, perMinute, now);
    }

    void charge(String tenant, long tokens, long now) {
        long perMinute = limits.of(tenant).tokensPerMinute();
        if (perMinute <= 0 || tokens <= 0) {
            return;
        }
        bucket(tenant, perMinute, now).level -= tokens;
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

    private static final class Bucket {
        double level;
        long at;

        Bucket(double level, long at) {
            this.level = level;
            this.at = at;
        }

        double refill(long perMinute, long now) {
            level = Math.min(perMinute, level + (now - at) / 60e9 * perMinute);
            at = now;
            return level;
        }
    }

    /** Forgets full buckets (a tenant at its limit is the same as one never seen): bounded memory. */
    void prune(long now) {
        buckets.entrySet().removeIf(e -> {
            long perMinute = limits.of(e.getKey()).tokensPerMinute();
            return perMinute <= 0 || e.getValue().refill(perMinute, now) >= perMinute;
        });
    }

    int tracked() {
        return buckets.size();
    }
}
