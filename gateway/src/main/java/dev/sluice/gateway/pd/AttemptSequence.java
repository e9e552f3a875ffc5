package dev.sluice.gateway.pd;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.tracing.RequestTrace;
import java.util.ArrayList;
import java.util.List;

/**
 * The attempts at one request: the one that speaks for it now, those given up that may still be
 * stopping (an abort waits for its acknowledgement), and the retry that waits between two. Each
 * attempt gets the next {@link AttemptKey}; the first keeps the request's own rid, a retry a fresh
 * one. Event-loop confined.
 */
final class AttemptSequence {
    private final List<Attempt> all = new ArrayList<>(1);
    private final RetryScheduler retry;
    private final String firstRid;
    private final RequestTrace trace;
    private Attempt current;

    AttemptSequence(RetryScheduler retry, String firstRid) {
        this(retry, firstRid, RequestTrace.NONE);
    }

    /** {@code trace}: a stopped attempt's open calls are recorded as aborted, with the cause. */
    AttemptSequence(RetryScheduler retry, String firstRid, RequestTrace trace) {
        this.retry = retry;
        this.firstRid = firstRid;
        this.trace = trace;
    }

    /** The attempt that speaks for the request now, or null before the first grant. */
    Attempt current() {
        return current;
    }

    /** Whether {@code k} names the current attempt (else its news is stale). */
    boolean isCurrent(AttemptKey k) {
        return current != null && k == current.key;
    }

    /** The current attempt, unless none runs or it was given up. */
    Attempt live() {
        return current == null || current.givenUp() ? null : current;
    }

    int count() {
        return all.size();
    }

    RetryScheduler retry() {
        return retry;
    }

    /** The key of the next attempt on {@code p}/{@code d}, at the ranks admission chose there. */
    AttemptKey nextKey(Worker p, Worker d, dev.sluice.gateway.routing.RankChoice ranks) {
        return new AttemptKey(all.isEmpty() ? firstRid : RequestIds.next(), p, d, ranks);
    }

    /** {@code a} now speaks for the request. */
    void begin(Attempt a) {
        current = a;
        all.add(a);
    }

    /** Gives up the current attempt (if any still speaks) and stops whatever of it runs. */
    void stopCurrent(AbortCause cause) {
        Attempt a = live();
        if (a != null) {
            a.giveUp();
            trace.aborted(a.key, cause.label());
            a.stop(cause);
        }
    }

    /** Every attempt has ended (aborts acknowledged) and no retry waits. */
    boolean allDone() {
        for (Attempt a : all) {
            if (!a.done()) {
                return false;
            }
        }
        return !retry.pending();
    }
}
