package dev.sluice.gateway.routing;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Prompt tokens each worker took in lately by its own counter ({@link LoadView#reportedPromptTokens},
 * SGLang's {@code realtime_tokens_total} prefill modes, vLLM's {@code prompt_tokens_total}): the
 * counter's growth, summed with the same half-life as {@link RecentLoad}.
 *
 * <p>Why: the share guard must judge the fleet's traffic, and a replica sees only its own. The
 * workers' counters count every replica's requests (and any other client's), and every replica
 * reads the same ones, so the figure is the fleet's with or without coordination. It lags the
 * gateway's own figure by a poll and a prefill, which {@link CacheAwarePolicy} covers by taking,
 * per worker, the larger of the two.
 *
 * <p>A growth is counted at the moment a decision first sees it (within a telemetry interval of
 * when it happened; negligible against a half-life of a minute). A counter that went back (the
 * worker restarted) starts over from its new value. Used under the admission lock, like its policy.
 */
final class ReportedLoad {
    private final double halfLifeNanos;
    private final LongSupplier nanoClock;
    /** {last counter value, decayed growth, at nanos}. */
    private final Map<Worker, double[]> byWorker = new IdentityHashMap<>();

    ReportedLoad(long halfLifeNanos, LongSupplier nanoClock) {
        if (halfLifeNanos <= 0) {
            throw new IllegalArgumentException("halfLifeNanos: " + halfLifeNanos + " (expected: > 0)");
        }
        this.halfLifeNanos = halfLifeNanos;
        this.nanoClock = nanoClock;
    }

    /**
     * Each candidate's decayed counter growth now, index for index; null when any candidate's
     * counter is unknown or stale (the figures would not compare). A worker's first reading is its
     * baseline: it counts from there.
     */
    double[] of(List<Worker> candidates, LoadView view) {
        long now = nanoClock.getAsLong();
        double[] out = new double[candidates.size()];
        boolean known = true;
        for (int i = 0; i < out.length; i++) {
            Worker w = candidates.get(i);
            double counter = view.reportedPromptTokens(w);
            if (Double.isNaN(counter)) {
                known = false;
                continue;
            }
            double[] s = byWorker.get(w);
            if (s == null) {
                byWorker.put(w, new double[] {counter, 0, now});
                continue;
            }
            double grown = counter - s[0];
            s[1] = decayed(s, now) + Math.max(0, grown);
            s[2] = now;
            s[0] = counter; // gone back (a restart): counts on from the new value
            out[i] = s[1];
        }
        return known ? out : null;
    }

    void forget(Worker worker) {
        byWorker.remove(worker);
    }

    private double decayed(double[] s, long now) {
        long age = now - (long) s[2];
        return age <= 0 ? s[1] : s[1] * Math.pow(0.5, age / halfLifeNanos);
    }
}
