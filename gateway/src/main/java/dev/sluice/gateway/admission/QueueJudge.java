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
    /** Verdicts for a newcomer that goes ahead of others: from the indexes, and by a walk (tests, the benchmark). */
    long indexedVerdicts;
    long walks;

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
     * The rate a refusal is judged at: the cluster's point estimate once every rate is measured or a
     * prior; with early rejection, its optimistic bound ({@link RateEstimate}). NaN: no refusal for a
     * deadline now (a guess, or nothing bounds the rate yet).
     */
    double judgedRate(long now) {
        if (prefill.earlyRejection()) {
            double upper = prefill.upperClusterRate(now);
            return Double.isFinite(upper) ? upper : Double.NaN;
        }
        return prefill.known() ? prefill.clusterRate() : Double.NaN;
    }

    /** What the prefill workers still hold, at {@code rate} ({@link #judgedRate}). */
    private double judgedRemaining(long now) {
        return prefill.earlyRejection() ? prefill.upperRemainingTokens(now) : prefill.remainingTokens(now);
    }

    /** The forecast refusals are judged by ({@link #judgedRate}); null when none is to be made. */
    private Forecast judged(long now) {
        double rate = judgedRate(now);
        return Double.isNaN(rate) ? null
                : new Forecast(now, judgedRemaining(now), rate, ledger.pace, ledger.slack.seconds());
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
     * predicted late (each review answers those, at least every {@code review_interval}).
     *
     * <p>When it goes ahead of others, the {@link Headroom} bound decides: while it shows every
     * queued request in time even with the work {@code t} puts before them, the walk would find only
     * {@code t}'s own fate open, and that is judged from the queue's indexes ({@link
     * PriorityQueues#place}: what is served before it, and the longest prompt of its class among
     * those): O(tenants of its class x log n). Otherwise the whole queue is walked in service order,
     * O(n), and the walk starts the bound over.
     */
    List<Forecast.Late> late(PriorityQueues queue, Ticket t, boolean shedLongest, long now) {
        double rate = judgedRate(now);
        Headroom headroom = queue.headroom();
        if (Double.isNaN(rate)) {
            headroom.invalidate(); // let in unjudged: nothing bounds its headroom
            return List.of();
        }
        double remaining = judgedRemaining(now);
        double spread = doorSpread();
        if (queue.isLast(t)) {
            Ticket longest = shedLongest ? queue.longestSheddableOf(t.priority) : null;
            return alone(t, queue.tokensAtOrAbove(t.priority) - t.tokens, longest == t ? null : longest,
                    remaining, rate, spread, now, headroom);
        }
        if (headroom.holds(now, remaining, rate, ledger.slack.seconds(), ledger.pace.secondsPerToken())) {
            indexedVerdicts++;
            QueuePlace place = queue.place(t);
            return alone(t, place.tokens, shedLongest ? place.longestOfClass : null, remaining, rate, spread, now,
                    headroom);
        }
        walks++;
        headroom.restart(now, rate, ledger.pace.secondsPerToken());
        List<Forecast.Late> late = judged(now, remaining, rate).covering(headroom).newcomer(t, spread)
                .late(queue.serviceOrder(), shedLongest);
        Forecast.Late spared = sparing(queue, t, late, shedLongest, remaining, rate, now);
        if (spared != null) {
            headroom.invalidate(); // covered with t in the queue, which is leaving it
            return List.of(spared);
        }
        if (late.size() > 1 && late.stream().anyMatch(l -> l.ticket() == t)) {
            headroom.invalidate(); // refused, and others late too: they stay queued until the review
        }
        return late;
    }

    /** The door's margin per prefill second ahead: two of the rate's relative spreads ({@link RateSpread}). */
    double doorSpread() {
        return 2 * prefill.relativeSpread();
    }

    /**
     * The newcomer's refusal when letting it in would refuse committed requests ({@link Ticket#committed}:
     * past their deadlines, or shed for one of them) that are served without it, else null. A committed request already late
     * without the newcomer (new evidence since the last review) is no reason to refuse it: the second
     * walk, without it, tells the two apart. Only on the walk's path (the indexes answer only when no one
     * else is late).
     */
    private Forecast.Late sparing(PriorityQueues queue, Ticket t, List<Forecast.Late> late, boolean shedLongest,
                                  double remaining, double rate, long now) {
        int committedLate = 0;
        for (Forecast.Late l : late) {
            if (l.ticket() == t) {
                return null; // refused for its own deadline; counted as no work, it made no one late
            }
            if (l.ticket().committed) {
                committedLate++;
            }
        }
        if (committedLate == 0) {
            return null;
        }
        List<Ticket> without = queue.serviceOrder();
        without.remove(t);
        java.util.Set<Ticket> lateAnyway = new java.util.HashSet<>();
        for (Forecast.Late l : judged(now, remaining, rate).late(without, shedLongest)) {
            lateAnyway.add(l.ticket());
        }
        int spared = 0;
        for (Forecast.Late l : late) {
            if (l.ticket() != t && l.ticket().committed && !lateAnyway.contains(l.ticket())) {
                spared++;
            }
        }
        if (spared == 0) {
            return null;
        }
        Forecast f = judged(now, remaining, rate).newcomer(t, doorSpread());
        double seconds = f.until(queue.serviceOrder(), t);
        return new Forecast.Late(t, seconds, f.tokensAhead(), true, spared);
    }

    /**
     * The verdict of the walk for {@code t} when nobody else's fate is open: {@code aheadTokens} queued
     * tokens are served before it, {@code longest} is the longest prompt of its class among them
     * (null: none, or no shedding). Covers {@code t} when it is let in.
     */
    private List<Forecast.Late> alone(Ticket t, long aheadTokens, Ticket longest, double remaining, double rate,
                                      double spread, long now, Headroom headroom) {
        Forecast f = judged(now, remaining, rate).newcomer(t, spread).after(aheadTokens);
        double seconds = f.secondsFor(t);
        double before = f.tokensAhead();
        if (f.take(t)) {
            headroom.cover(t, aheadTokens + t.tokens);
            return List.of();
        }
        if (longest != null && longest.tokens > t.tokens
                && judged(now, remaining, rate).newcomer(t, spread).after(aheadTokens - longest.tokens).take(t)) {
            headroom.cover(t, aheadTokens + t.tokens); // the longest's removal only takes work away
            return List.of(new Forecast.Late(longest, Double.NaN, before, true));
        }
        return List.of(new Forecast.Late(t, seconds, before, false));
    }

    private Forecast judged(long now, double remaining, double rate) {
        return new Forecast(now, remaining, rate, ledger.pace, ledger.slack.seconds());
    }

    /**
     * Re-judges every queued request: walked in the order it will be served, with what the prefill
     * workers still hold ahead of it, each one whose first token can no longer come before its
     * deadline is answered now (429 {@code deadline_unreachable}), rather than at its deadline, and
     * stops counting as work ahead of the others. Off while the rates are only guessed.
     */
    void review(PriorityQueues queue, AdmissionConfig config, long now, After after) {
        Forecast f = judged(now);
        if (f == null) {
            return;
        }
        queue.headroom().restart(now, judgedRate(now), ledger.pace.secondsPerToken());
        if (queue.size() > 0) {
            notServed(queue, f.covering(queue.headroom()).late(queue.serviceOrder(), shedLongest(config)), config,
                    now, after);
        }
    }

    /** Answers the queued requests a forecast says are not to be served. */
    void notServed(PriorityQueues queue, List<Forecast.Late> late, AdmissionConfig config, long now, After after) {
        double judged = late.isEmpty() ? Double.NaN : judgedRate(now);
        double rate = Double.isNaN(judged) ? prefill.clusterRate() : judged; // the rate they were judged at
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
