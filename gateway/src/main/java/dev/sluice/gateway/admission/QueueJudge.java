package dev.sluice.gateway.admission;

import dev.sluice.gateway.admission.Decisions.After;
import dev.sluice.gateway.config.AdmissionConfig;
import java.util.List;

/**
 * Judges queued requests against their deadlines at the rates known now: the newcomer at the door,
 * the whole queue at a review, and who gives way when the queue or the budget is full. Answers what
 * is not to be served (listeners told after the lock). Under the admission lock.
 */
final class QueueJudge {
    private final PrefillRates prefill;
    private final PrefillLedger ledger;
    private final AdmissionObserver observer;

    QueueJudge(PrefillRates prefill, PrefillLedger ledger, AdmissionObserver observer) {
        this.prefill = prefill;
        this.ledger = ledger;
        this.observer = observer;
    }

    /** A forecast from now: what the prefill workers still hold, at the cluster's rate. */
    Forecast forecast(long now) {
        return new Forecast(now, prefill.remainingTokens(now), prefill.clusterRate(), ledger.pace,
                ledger.slack.seconds());
    }

    /**
     * The queued requests not to be served now that {@code t} has joined the queue: {@code t} itself
     * when it cannot make its deadline, a longer prompt of its class that gives way to it, or the
     * requests it goes ahead of that can no longer make theirs. Empty while the rates are guessed.
     *
     * <p>When {@code t} is the last to be served ({@link PriorityQueues#isLast}: the usual newcomer
     * under load), only its own fate is open: the work ahead of it is everything queued and in
     * prefill, and the longest prompt of its class is indexed, so the verdict costs O(log n) however
     * deep the queue. It is the verdict the walk gives as long as no queued request is already
     * predicted late (each review answers those, at least every {@code review_interval}). Otherwise
     * the whole queue is walked in service order, O(n).
     */
    List<Forecast.Late> late(PriorityQueues queue, Ticket t, boolean shedLongest, long now) {
        if (!prefill.known()) {
            return List.of();
        }
        if (!queue.isLast(t)) {
            return forecast(now).late(queue.serviceOrder(), shedLongest);
        }
        double ahead = prefill.remainingTokens(now) + queue.tokensAtOrAbove(t.priority) - t.tokens;
        Forecast f = new Forecast(now, ahead, prefill.clusterRate(), ledger.pace, ledger.slack.seconds());
        double seconds = f.secondsFor(t);
        if (f.take(t)) {
            return List.of();
        }
        Ticket longest = shedLongest ? queue.longestOf(t.priority) : null;
        if (longest != null && longest != t && longest.tokens > t.tokens) {
            Forecast without = new Forecast(now, ahead - longest.tokens, prefill.clusterRate(), ledger.pace,
                    ledger.slack.seconds());
            if (without.take(t)) {
                return List.of(new Forecast.Late(longest, Double.NaN, ahead, true));
            }
        }
        return List.of(new Forecast.Late(t, seconds, ahead, false));
    }

    /**
     * Re-judges every queued request: walked in the order it will be served, with what the prefill
     * workers still hold ahead of it, each one whose first token can no longer come before its
     * deadline is answered now (429 {@code deadline_unreachable}), rather than at its deadline, and
     * stops counting as work ahead of the others. Off while the rates are only guessed.
     */
    void review(PriorityQueues queue, AdmissionConfig config, long now, After after) {
        if (queue.size() == 0 || !prefill.known()) {
            return;
        }
        notServed(queue, forecast(now).late(queue.serviceOrder(), shedLongest(config)), config, now, after);
    }

    /** Answers the queued requests a forecast says are not to be served. */
    void notServed(PriorityQueues queue, List<Forecast.Late> late, AdmissionConfig config, long now, After after) {
        double rate = prefill.clusterRate();
        for (Forecast.Late l : late) {
            Ticket t = l.ticket();
            if (t.state != Ticket.State.QUEUED) {
                continue; // evicted meanwhile: it has its answer
            }
            removeQueued(queue, t);
            t.state = Ticket.State.ENDED;
            tell(after, t, l.shed() ? Rejections.shed(config, t, now, l.tokensAhead() / rate)
                    : Rejections.noLongerReachable(config, t, now, l.tokensAhead(), rate, l.predictedSeconds()));
        }
    }

    /** Answers the queued requests that give way for {@code newcomer} ({@link EvictionPlan}). */
    void evict(PriorityQueues queue, EvictionPlan room, Ticket newcomer, AdmissionConfig config, long now, After after) {
        if (room.victims.isEmpty()) {
            return; // the usual case: no second walk of the queue
        }
        // the victims' Retry-After: the newcomer's own predicted wait
        double waitSeconds = forecast(now).until(queue.serviceOrder(), newcomer);
        for (int i = 0; i < room.victims.size(); i++) {
            Ticket v = room.victims.get(i);
            removeQueued(queue, v);
            v.state = Ticket.State.ENDED; // under the lock: a concurrent release must see it as ended
            tell(after, v, i < room.byPriority ? Rejections.evictedByPriority(config, waitSeconds)
                    : i < room.byPriority + room.byLength ? Rejections.shed(config, v, now, waitSeconds)
                    : Rejections.evictedByShare(config, v, newcomer, waitSeconds));
        }
    }

    static boolean shedLongest(AdmissionConfig config) {
        return config.scheduling().shed() == AdmissionConfig.Shed.LONGEST;
    }

    void removeQueued(PriorityQueues queue, Ticket t) {
        if (queue.remove(t)) {
            ledger.notPending(t);
        }
    }

    void tell(After after, Ticket t, Rejection r) {
        Rejections.tell(after, observer, t, r);
    }
}
