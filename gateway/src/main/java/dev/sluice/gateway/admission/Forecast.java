package dev.sluice.gateway.admission;

import java.util.ArrayList;
import java.util.List;

/**
 * When each queued request's first token would come (for a non-streamed request, its whole answer),
 * at the rates known now: the work still in
 * prefill first, then the queue in the order it will be served, each request's prompt at the
 * cluster's rate. A request that cannot make its deadline adds no work for those behind it: it
 * will be answered, not prefilled. One walk of the queue, O(n); under the admission lock. The work
 * ahead is what the workers hold plus a whole number of queued tokens, summed as an integer: the
 * same request gets the same prediction, to the bit, from a walk and from the queue's indexes.
 */
final class Forecast {
    /**
     * A queued request that is not to be served: its first token is predicted past its deadline, or
     * ({@code shed}) it gave way so that more requests of its class make theirs; or a newcomer that
     * would have pushed {@code committedSpared} committed requests past their deadlines (refused at its
     * door instead, {@link QueueJudge#late}).
     */
    record Late(Ticket ticket, double predictedSeconds, double tokensAhead, boolean shed, int committedSpared) {
        Late(Ticket ticket, double predictedSeconds, double tokensAhead, boolean shed) {
            this(ticket, predictedSeconds, tokensAhead, shed, 0);
        }
    }

    private final long now;
    private final double rate;
    private final DecodePace pace;
    private final double slackSeconds;
    private final double remaining; // what the prefill workers hold
    private long queued; // queued prompt tokens to compute before the next request in order
    private Headroom covering; // told of each request found in time, or null
    private Ticket newcomer; // judged with the door's margin, or null
    private double spread; // the rate's relative spread: the newcomer's margin per second of prefill ahead

    /**
     * @param remainingTokens what the prefill workers still have to compute of what they hold
     * @param rate            the cluster's prompt tokens per second
     * @param slackSeconds    how much later than predicted prefills have been finishing ({@link PredictionSlack})
     */
    Forecast(long now, double remainingTokens, double rate, DecodePace pace, double slackSeconds) {
        this.now = now;
        this.rate = rate;
        this.pace = pace;
        this.slackSeconds = slackSeconds;
        this.remaining = remainingTokens;
    }

    /** From here on, {@code tokens} queued prompt tokens are served before the next request. */
    Forecast after(long tokens) {
        queued = tokens;
        return this;
    }

    /** From here on, each request found in time is covered by {@code headroom}. */
    Forecast covering(Headroom headroom) {
        covering = headroom;
        return this;
    }

    /**
     * The newcomer at the door is judged with a margin for the rate's uncertainty: its prefill seconds
     * ahead times {@code spread} (2 x the rate's relative spread, {@link RateSpread}), so that one
     * admitted is very likely still in time at the later reviews; those already queued are judged at the
     * point prediction (a re-decision needs new evidence).
     */
    Forecast newcomer(Ticket t, double spread) {
        newcomer = t;
        this.spread = spread > 0 && Double.isFinite(spread) ? spread : 0;
        return this;
    }

    /**
     * Seconds until {@code t}'s client sees its first byte if it were next: its first token, and for a
     * non-streamed request its whole answer after that (which delays no one else's prefill); for the
     * {@link #newcomer}, with its margin.
     */
    double secondsFor(Ticket t) {
        double prefill = (tokensAhead() + t.tokens) / rate;
        double margin = t == newcomer ? prefill * spread : 0;
        return prefill + margin + slackSeconds + pace.seconds(t.answerTokens);
    }

    /** Whether {@code t}, next in order, would get its first token by its deadline; if so its work counts for those behind. */
    boolean take(Ticket t) {
        boolean inTime = Nanos.plusSeconds(now, secondsFor(t)) <= t.waitDeadline;
        if (inTime) {
            queued += t.tokens;
            if (covering != null) {
                covering.cover(t, queued);
            }
        }
        return inTime;
    }

    /** Prompt tokens to compute before the next request: what the workers hold and the queued ones taken. */
    double tokensAhead() {
        return remaining + queued;
    }

    /**
     * The requests of {@code order} (service order) not to be served. Each that can no longer make its
     * deadline is dropped; with {@code shedLongest}, it first tries Moore–Hodgson's move: if the longest
     * prompt of its class already counted ahead of it is longer than its own, that one gives way when
     * that lets it in (one longer request for one shorter: the most requests of the class make their
     * deadlines, for a common arrival; never across classes). A committed request ({@link
     * Ticket#committed}: it has waited {@code shed_commit_after}) gives way only to another committed
     * one, never to a later arrival: for a late request not yet committed only the longest not
     * committed ahead of it is a candidate; for a committed one (late on new evidence: a slower rate),
     * the longest of all, which keeps the most of those committed in time.
     */
    List<Late> late(List<Ticket> order, boolean shedLongest) {
        List<Late> out = new ArrayList<>(0);
        java.util.PriorityQueue<Ticket> taken = shedLongest ? new java.util.PriorityQueue<>(Ticket.LONGEST_FIRST) : null;
        java.util.PriorityQueue<Ticket> fresh = shedLongest ? new java.util.PriorityQueue<>(Ticket.LONGEST_FIRST) : null;
        java.util.Set<Ticket> gone = shedLongest ? java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>())
                : null; // shed from one heap: skipped when met at the other's top
        int lane = -1;
        for (Ticket t : order) {
            if (taken != null && t.priority != lane) {
                taken.clear(); // a class gives way only within itself
                fresh.clear();
                gone.clear();
                lane = t.priority;
            }
            double seconds = secondsFor(t);
            double before = tokensAhead();
            if (take(t)) {
                if (taken != null) {
                    taken.add(t);
                    if (!t.committed) {
                        fresh.add(t);
                    }
                }
                continue;
            }
            Ticket longest = taken == null ? null : top(t.committed ? taken : fresh, gone);
            if (longest != null && longest.tokens > t.tokens) {
                queued -= longest.tokens;
                if (take(t)) {
                    gone.add(longest);
                    taken.add(t);
                    if (!t.committed) {
                        fresh.add(t);
                    }
                    out.add(new Late(longest, Double.NaN, before, true));
                    continue;
                }
                queued += longest.tokens;
            }
            out.add(new Late(t, seconds, before, false));
        }
        return out;
    }

    /** The longest of {@code heap} not yet shed. */
    private static Ticket top(java.util.PriorityQueue<Ticket> heap, java.util.Set<Ticket> gone) {
        while (heap.peek() != null && gone.contains(heap.peek())) {
            heap.poll();
        }
        return heap.peek();
    }

    /** Walks {@code order} up to {@code target}; its predicted seconds to first token, or NaN if it is not in it. */
    double until(List<Ticket> order, Ticket target) {
        for (Ticket t : order) {
            if (t == target) {
                return secondsFor(t);
            }
            take(t);
        }
        return Double.NaN;
    }
}
