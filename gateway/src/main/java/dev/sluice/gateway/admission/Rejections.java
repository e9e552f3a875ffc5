package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.SuspectProbe;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import java.util.List;

/**
 * Every "no" admission can say, with its message and its Retry-After, in one place: the
 * controller decides, this words it. Retry-After is in whole seconds, clamped to
 * {@code admission.retry_after_min..max} (except where noted).
 */
final class Rejections {
    private Rejections() {
    }

    /** Not clamped: a draining gateway's client should try another instance at once. */
    static Rejection draining() {
        return new Rejection(RejectReason.DRAINING, "the gateway is draining for shutdown; retry on another instance", 1);
    }

    /**
     * No worker of {@code role} takes requests. When one is suspect of a silent stall, the answer
     * says so, with a Retry-After until the gateway's next probe of it (never shorter: an earlier
     * retry would meet the same refusal), not clamped to {@code admission.retry_after_max}.
     */
    static Rejection noWorker(AdmissionConfig config, String role, List<Worker> workers, long now) {
        Worker suspect = null;
        SuspectProbe probe = null;
        for (Worker w : workers) {
            SuspectProbe p = w.state() == WorkerState.SUSPECT ? w.suspectProbe().orElse(null) : null;
            if (p != null && (probe == null || p.nextNanos() < probe.nextNanos())) {
                suspect = w;
                probe = p;
            }
        }
        if (suspect == null) {
            return new Rejection(RejectReason.NO_CAPACITY, "no available " + role + " worker",
                    seconds(config, config.retryAfterMin().toSeconds()));
        }
        long retryAfter = Math.max(Math.max(1, config.retryAfterMin().toSeconds()), probe.retryAfterSeconds(now));
        long nextMs = Math.max(0, (probe.nextNanos() - now) / 1_000_000);
        return new Rejection(RejectReason.WORKER_SUSPECT, role + " worker " + suspect.name() + " stalled requests while "
                + "its health checks pass and no other " + role + " worker can take them (health.stall_panic): no "
                + "request goes to it until the gateway's own probe of it succeeds; " + (probe.running()
                ? "a probe is running (its verdict within " + Math.max(0, (probe.verdictNanos() - now) / 1_000_000)
                        + " ms; should it fail, the next probe within " + nextMs + " ms)"
                : "the next probe in " + nextMs + " ms") + (probe.failed() > 0 ? ", " + probe.failed()
                + " failed so far" : ""), retryAfter);
    }

    /** Whether one of {@code workers} is suspect of a silent stall (its probes may bring it back). */
    static boolean anySuspect(List<Worker> workers) {
        for (Worker w : workers) {
            if (w.state() == WorkerState.SUSPECT) {
                return true;
            }
        }
        return false;
    }

    /** No Retry-After: retrying will not help. */
    static Rejection tooLarge(AdmissionConfig config, Ticket t) {
        return new Rejection(RejectReason.REQUEST_TOO_LARGE, "the prompt has about " + t.tokens
                + " tokens; admission.max_request_tokens is " + config.maxRequestTokens(), 0);
    }

    static Rejection tenantRate(AdmissionConfig config, Ticket t, long waitNanos) {
        return new Rejection(RejectReason.TENANT_RATE_LIMITED, "tenant " + t.tenant + " used its admission.tenant_limits "
                + "tokens_per_minute=" + config.tenantLimits().of(t.tenant).tokensPerMinute() + " (prompt + "
                + "completion tokens); it refills in " + (waitNanos / 1_000_000) + " ms", seconds(config, waitNanos / 1e9));
    }

    static Rejection queueFull(AdmissionConfig config, double waitSeconds) {
        return new Rejection(RejectReason.QUEUE_FULL, "the queue holds admission.max_queued_requests="
                + config.maxQueuedRequests() + " requests", seconds(config, waitSeconds));
    }

    static Rejection tokenBudget(AdmissionConfig config, Ticket t, long pendingTokens, double rate) {
        long excess = pendingTokens + t.tokens - config.maxPendingTokens();
        return new Rejection(RejectReason.TOKEN_BUDGET_EXCEEDED, pendingTokens + " prompt tokens are pending and this "
                + "request has about " + t.tokens + "; admission.max_pending_tokens is " + config.maxPendingTokens(),
                seconds(config, excess / rate));
    }

    static Rejection deadlineUnreachable(AdmissionConfig config, long ahead, double rate, double predictedWait) {
        return new Rejection(RejectReason.DEADLINE_UNREACHABLE, String.format(
                "about %d prompt tokens are ahead at %.0f tokens/s: its first token would come in %.1f s, "
                        + "past the deadline", ahead, rate, predictedWait), seconds(config, predictedWait));
    }

    /** Queued, re-judged: its first token can no longer come before its deadline (found by a review). */
    static Rejection noLongerReachable(AdmissionConfig config, Ticket t, long now, double ahead, double rate,
                                       double predictedWait) {
        long waitedMs = (now - t.enqueuedNanos) / 1_000_000;
        return new Rejection(RejectReason.DEADLINE_UNREACHABLE, String.format("waited %d ms in the queue; about %d "
                        + "prompt tokens are now ahead at %.0f tokens/s: its first token would come in %.1f s, past its "
                        + "deadline", waitedMs, (long) ahead, rate, predictedWait), seconds(config, predictedWait));
    }

    /** Queued, set aside for shorter requests of its class so that more of them make their deadlines. */
    static Rejection shed(AdmissionConfig config, Ticket t, long now, double waitSeconds) {
        long waitedMs = (now - t.enqueuedNanos) / 1_000_000;
        return new Rejection(RejectReason.SHED, "waited " + waitedMs + " ms; its prompt (about " + t.tokens
                + " tokens) gave way to shorter requests of its class, so that more of them get their first token "
                + "before their deadlines (admission.scheduling.shed: longest)", seconds(config, waitSeconds));
    }

    /**
     * A newcomer that would push {@code spared} committed requests (queued longer than
     * {@code shed_commit_after}) past their deadlines: it gives way to them at its door.
     */
    static Rejection sparesCommitted(AdmissionConfig config, int spared, double waitSeconds) {
        return new Rejection(RejectReason.SHED, "its first token could come in time only if " + spared + " request"
                + (spared == 1 ? "" : "s") + " queued for over " + config.scheduling().shedCommitAfter().toMillis()
                + " ms were pushed past their deadlines; they are committed (admission.scheduling.shed_commit_after), "
                + "so it gives way at the door", seconds(config, waitSeconds));
    }

    static Rejection evictedByPriority(AdmissionConfig config, double waitSeconds) {
        return new Rejection(RejectReason.EVICTED, "evicted from the queue by a higher-priority request",
                seconds(config, waitSeconds));
    }

    static Rejection evictedByShare(AdmissionConfig config, Ticket victim, Ticket newcomer, double waitSeconds) {
        return new Rejection(RejectReason.TENANT_SHARE, "evicted from the queue: tenant " + victim.tenant + " held more "
                + "than its admission.tenant_limits share while tenant " + newcomer.tenant + " (under its share) "
                + "arrived", seconds(config, waitSeconds));
    }

    /** Its wait in the queue ended ({@code deadline}: the earlier of the client's and the queue timeout). */
    static Rejection queueTimeout(AdmissionConfig config, Ticket t, long now, long deadline, double waitSeconds) {
        long waitedMs = (now - t.enqueuedNanos) / 1_000_000;
        return new Rejection(RejectReason.QUEUE_TIMEOUT, "waited " + waitedMs + " ms in the queue ("
                + (t.deadlineNanos <= deadline ? "the client's deadline" : "admission.queue_timeout") + ")",
                seconds(config, waitSeconds));
    }

    /** At the head of the queue with room for it, but its first token could no longer come in time. */
    static Rejection tooLate(AdmissionConfig config, Ticket t, long now, double waitSeconds) {
        long waitedMs = (now - t.enqueuedNanos) / 1_000_000;
        return new Rejection(RejectReason.QUEUE_TIMEOUT, "waited " + waitedMs + " ms; its first token "
                + "could no longer come before its deadline, so it was not sent to a worker", seconds(config, waitSeconds));
    }

    /** The ticket, already ended under the lock, hears its rejection after the lock is released. */
    static void tell(After after, AdmissionObserver observer, Ticket t, Rejection r) {
        after.add(() -> {
            observer.rejected(t, r.reason());
            t.executor.execute(() -> t.listener.rejected(r));
        });
    }

    /** Retry-After in whole seconds, clamped to the configured range. */
    static long seconds(AdmissionConfig config, double s) {
        long min = Math.max(1, config.retryAfterMin().toSeconds());
        long max = Math.max(min, config.retryAfterMax().toSeconds());
        return Math.max(min, Math.min(max, (long) Math.ceil(s)));
    }
}
