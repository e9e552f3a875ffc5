package dev.sluice.gateway.pd;

import dev.sluice.gateway.config.RetryConfig;
import dev.sluice.gateway.routing.Worker;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/** When and where a failed attempt may be tried again ({@code retries:} in the config). */
final class RetryPlan {
    private RetryPlan() {
    }

    /**
     * The wait before the next attempt (base x 2^(n-1), capped, with jitter), or -1 when no retry is
     * left or the wait would not end before {@code deadlineNanos}.
     */
    static long backoffNanos(RetryConfig cfg, int retriesSoFar, long nowNanos, long deadlineNanos) {
        if (retriesSoFar >= cfg.maxRetries()) {
            return -1;
        }
        double base = Math.min(cfg.backoffMax().toNanos(), cfg.backoffBase().toNanos() * Math.pow(2, retriesSoFar));
        long wait = (long) (base * (1 - cfg.jitter() * ThreadLocalRandom.current().nextDouble()));
        return nowNanos + wait >= deadlineNanos ? -1 : wait;
    }

    /** The workers the next pair should avoid: the one at fault; after a stall nobody can tell yet, so both. */
    static List<Worker> avoid(AttemptFailure f, Attempt a) {
        if (f.culprit() != null) {
            return List.of(f.culprit());
        }
        return "stall".equals(f.retryReason()) ? List.of(a.prefill, a.decode) : List.of();
    }

    /** The {@code sluice_aborts_total} cause of stopping an attempt after {@code f}. */
    static String abortCause(AttemptFailure f) {
        String r = f.retryReason();
        return "stall".equals(r) ? "stall" : "worker_ejected".equals(r) ? "worker_ejected" : "peer_failed";
    }
}
