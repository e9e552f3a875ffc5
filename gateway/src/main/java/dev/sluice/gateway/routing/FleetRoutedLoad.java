package dev.sluice.gateway.routing;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The share guard's "lately" for the whole fleet of gateway replicas: the prompt tokens this
 * replica's {@code cache_aware} routed to each prefill worker lately ({@link RecentLoad}), and the
 * sum the other replicas reported for it through coordination ({@code coordination:}, each renewal
 * carries the replica's figures and brings back its peers'; docs/scale-out.md).
 *
 * <p>Why: a replica sees only its own traffic, and clients keep to their replica (a connection, a
 * session), so one replica's share of a worker is lumpy where the fleet's is even. Judged on its
 * own, the guard moved conversations off the workers that held their prefixes: three replicas
 * with the KV event view kept 0.88–0.91x one gateway's hit rate on bench-routing's many-prompts
 * workload, 22 share overrides against none with one gateway (scripts/bench-routing-replicas).
 *
 * <p>Threads: {@link #own} is written under the admission lock (the policy, after each dispatch)
 * and read by the coordination's control loop; {@link #peersReported} is written by that loop and
 * read under the admission lock. Both are immutable maps behind volatiles. Keyed by worker URL,
 * the name every replica's configuration gives the same worker.
 */
public final class FleetRoutedLoad {
    private final double halfLifeNanos;
    private final LongSupplier nanoClock;
    /** This replica's figures: URL -> {tokens, at nanos}. */
    private volatile Map<String, double[]> own = Map.of();
    /** The other replicas' sum as last reported: URL -> {tokens, at nanos}. */
    private volatile Map<String, double[]> peers = Map.of();

    public FleetRoutedLoad(long halfLifeNanos, LongSupplier nanoClock) {
        if (halfLifeNanos <= 0) {
            throw new IllegalArgumentException("halfLifeNanos: " + halfLifeNanos + " (expected: > 0)");
        }
        this.halfLifeNanos = halfLifeNanos;
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
    }

    /** The half-life every figure decays with (the share guard's {@code balance_share_half_life}). */
    public long halfLifeNanos() {
        return (long) halfLifeNanos;
    }

    /** This replica's figures, decayed to now: what its next renewal reports. */
    public Map<String, Double> ownNow() {
        return decayedNow(own);
    }

    /** The other replicas' sum, decayed to now (0 for a worker none reported). */
    public double peersNow(Worker worker) {
        double[] s = peers.get(worker.url());
        return s == null ? 0 : decayed(s, nanoClock.getAsLong());
    }

    /**
     * The other replicas' figures summed per worker, each already decayed to the moment of this call
     * (by the age of its report); replaces the last report. An empty map: no peer reports.
     */
    public void peersReported(Map<String, Double> tokensNow) {
        long now = nanoClock.getAsLong();
        Map<String, double[]> next = new HashMap<>();
        tokensNow.forEach((url, v) -> {
            if (v != null && Double.isFinite(v) && v > 0) {
                next.put(url, new double[] {v, now});
            }
        });
        peers = Map.copyOf(next);
    }

    /** Decays {@code tokens} reported {@code ageNanos} ago to now. */
    public double aged(double tokens, long ageNanos) {
        return ageNanos <= 0 ? tokens : tokens * Math.pow(0.5, ageNanos / halfLifeNanos);
    }

    /** The policy's figures after a dispatch ({@link RecentLoad}'s state, copied). */
    void own(RecentLoad recent) {
        own = recent.byUrl();
    }

    private Map<String, Double> decayedNow(Map<String, double[]> m) {
        long now = nanoClock.getAsLong();
        Map<String, Double> out = new HashMap<>();
        m.forEach((url, s) -> out.put(url, decayed(s, now)));
        return out;
    }

    private double decayed(double[] s, long now) {
        return aged(s[0], now - (long) s[1]);
    }
}
