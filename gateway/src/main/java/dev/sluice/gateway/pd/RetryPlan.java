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
        return backoffNanos(cfg, retriesSoFar, nowNanos, deadlineNanos, ThreadLocalRandom.current().nextDouble());
    }

    /** As above with the jitter's random draw {@code u} in [0, 1) given (tests). */
    static long backoffNanos(RetryConfig cfg, int retriesSoFar, long nowNanos, long deadlineNanos, double u) {
        if (retriesSoFar >= cfg.maxRetries()) {
            return -1;
        }
        double base = Math.min(cfg.backoffMax().toNanos(), cfg.backoffBase().toNanos() * Math.pow(2, retriesSoFar));
        long wait = (long) (base * (1 - cfg.jitter() * u));
        return nowNanos + wait >= deadlineNanos ? -1 : wait;
    }

    /**
     * The workers the next pair should avoid: the one at fault; after a stall nobody can tell yet
     * whose it was, so both.
     */
    static List<Worker> avoid(AttemptFailure f, Worker prefill, Worker decode) {
        if (f.culprit() != null) {
            return List.of(f.culprit());
        }
        return f.retryReason() == RetryReason.STALL ? List.of(prefill, decode) : List.of();
    }
}
