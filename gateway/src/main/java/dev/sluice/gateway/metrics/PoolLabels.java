package dev.sluice.gateway.metrics;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code pool} label of every meter about a worker: a meter with a {@code worker} tag and no
 * {@code pool} gets its worker's pool (the default pool's name for a worker no pool claimed), so the
 * code that counts a worker's ejection or KV transfer failure need not know pools, and every series
 * of a name has the same label keys (Prometheus requires it). Meters of one pool without a worker
 * (admission, routing) are tagged by their pool's binders. Only with {@code pools:} ({@link #enable}):
 * a gateway of one implicit pool exports its series as they always were, without the label. Thread-safe.
 */
public final class PoolLabels implements MeterFilter {
    public static final String TAG = "pool";
    /**
     * The request meters each pool's view labels ({@link GatewayMetrics#forPool}); those of a request refused
     * before its pool was known (a bad body, an unknown model) carry {@code pool=""}; OpenTelemetry's GenAI
     * server metrics are among them.
     */
    public static final java.util.Set<String> POOLED = java.util.Set.of("sluice.requests", "sluice.request.duration",
            "sluice.time.to.first.token", "sluice.inter.token.latency", "sluice.aborts", "sluice.retries",
            "sluice.prompt.tokens", "sluice.completion.tokens", "sluice.vllm.handoffs", "sluice.upstream.errors",
            "sluice.abort.requests.sent", "gen_ai.server.time_to_first_token", "gen_ai.server.time_per_output_token",
            "gen_ai.server.request.duration");
    /**
     * Meters of what the HTTP layer refuses: always before routing, so always {@code pool=""} with pools,
     * never a pool's name (a pool's view does not label them, {@link GatewayMetrics#forPool}).
     */
    public static final java.util.Set<String> BEFORE_ANY_POOL = java.util.Set.of("sluice.http.rejections");

    private final Map<String, String> poolOfWorker = new ConcurrentHashMap<>();
    private volatile String defaultPool = dev.sluice.gateway.config.PoolsConfig.IMPLICIT_NAME;
    private volatile boolean on;

    /** Labels from now on (before any meter is registered); {@code pool} is that of a worker no pool claimed. */
    public void enable(String pool) {
        defaultPool = pool;
        on = true;
    }

    /** Whether meters carry the label ({@code pools:} configured). */
    public boolean on() {
        return on;
    }

    /** {@code worker} (its name, host:port) belongs to {@code pool}: its meters from now on carry it. */
    public void assign(String worker, String pool) {
        poolOfWorker.put(worker, pool);
    }

    /**
     * {@code pool} is gone (a reload removed it): every meter labelled with it leaves {@code registry}, and its
     * workers' names fall back to no pool (a worker another pool took meanwhile keeps that pool).
     *
     * @return how many meters were removed
     */
    public int forget(io.micrometer.core.instrument.MeterRegistry registry, String pool) {
        poolOfWorker.values().removeIf(pool::equals);
        int removed = 0;
        for (Meter m : java.util.List.copyOf(registry.getMeters())) {
            if (pool.equals(m.getId().getTag(TAG))) {
                registry.remove(m);
                removed++;
            }
        }
        return removed;
    }

    public String poolOf(String worker) {
        return poolOfWorker.getOrDefault(worker, defaultPool);
    }

    @Override
    public Meter.Id map(Meter.Id id) {
        if (!on || id.getTag(TAG) != null) {
            return id;
        }
        String worker = id.getTag("worker");
        if (worker != null) {
            return id.withTag(io.micrometer.core.instrument.Tag.of(TAG, poolOf(worker)));
        }
        return POOLED.contains(id.getName()) || BEFORE_ANY_POOL.contains(id.getName()) ? id.withTag(io.micrometer.core.instrument.Tag.of(TAG, "")) : id;
    }
}
