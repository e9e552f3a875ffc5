package dev.sluice.gateway.routing;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Prompt tokens a policy routed to each worker lately: a sum that decays with a half-life, so it
 * follows a shift in traffic within a few half-lives and needs no buckets. This is the long view
 * of load that the instantaneous windows lack: at moderate load the windows are nearly empty, so
 * a policy that only looks at them lets a hot prefix pile a growing share of the work (and of the
 * cache's footprint) onto one worker.
 *
 * <p>Used under the admission lock, like its policy: plain state, no synchronization.
 */
final class RecentLoad {
    private final double halfLifeNanos;
    private final LongSupplier nanoClock;
    private final Map<Worker, double[]> byWorker = new IdentityHashMap<>(); // {value, at nanos}

    RecentLoad(long halfLifeNanos, LongSupplier nanoClock) {
        if (halfLifeNanos <= 0) {
            throw new IllegalArgumentException("halfLifeNanos: " + halfLifeNanos + " (expected: > 0)");
        }
        this.halfLifeNanos = halfLifeNanos;
        this.nanoClock = nanoClock;
    }

    void add(Worker worker, long tokens) {
        long now = nanoClock.getAsLong();
        double[] s = byWorker.computeIfAbsent(worker, w -> new double[] {0, now});
        s[0] = decayed(s, now) + Math.max(0, tokens);
        s[1] = now;
    }

    /** Each candidate's decayed sum now, index for index (0 for a worker never sent anything). */
    double[] of(List<Worker> candidates) {
        long now = nanoClock.getAsLong();
        double[] out = new double[candidates.size()];
        for (int i = 0; i < out.length; i++) {
            double[] s = byWorker.get(candidates.get(i));
            out[i] = s == null ? 0 : decayed(s, now);
        }
        return out;
    }

    /** Each worker's state ({tokens, at nanos}, copied) by URL: what {@link FleetRoutedLoad} publishes. */
    Map<String, double[]> byUrl() {
        Map<String, double[]> out = new java.util.HashMap<>();
        byWorker.forEach((w, s) -> out.put(w.url(), s.clone()));
        return Map.copyOf(out);
    }

    void forget(Worker worker) {
        byWorker.remove(worker);
    }

    private double decayed(double[] s, long now) {
        long age = now - (long) s[1];
        return age <= 0 ? s[0] : s[0] * Math.pow(0.5, age / halfLifeNanos);
    }
}
