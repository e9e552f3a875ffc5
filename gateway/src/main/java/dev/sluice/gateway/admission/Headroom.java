package dev.sluice.gateway.admission;

/**
 * A lower bound on how early every queued request would get its first token before its deadline,
 * kept up to date without a walk, so that a newcomer that goes ahead of others (a higher class, an
 * earlier deadline, another tenant's turn) can be judged alone: while the bound says that nobody
 * queued is late, even with the work the newcomer adds in front of them, the walk of the queue
 * would find only the newcomer's own fate open ({@link QueueJudge#late}).
 *
 * <p>A walk in service order ({@link Forecast#late}) starts it over and covers each request it
 * finds in time; a newcomer is covered when it is let in. Each covered request j is held by
 * {@code (deadline_j - at) - K_j / rate - pace * answer_j} seconds, where {@code K_j} is the prompt
 * tokens served before it and its own, less the {@link #owe debt} at that moment (its prediction
 * at the walk's rate and decode pace, with no prefill held and no margin); the bound keeps the
 * least of these, and the largest and smallest {@code K} and the longest answer covered. Every
 * change that can add to what is served before a queued request adds at most that many tokens to
 * the debt: a newcomer that is not last (its prompt, and with several tenants in its class a round
 * of the others), a removal in a class shared by tenants (a later ticket of the same tenant moves
 * up a round: at most the class's longest prompt). A dispatch takes the head (no one's work grows:
 * it moves to what the prefill workers hold, which is read again). So at {@code now}, with the
 * prefill workers holding {@code R} at {@code rate'} and a margin of {@code slack}, every covered
 * request's headroom is at least
 * {@code least - (now - at) - (R + debt) / rate' - slack - K x (1/rate' - 1/rate) - answer x
 * (pace' - pace)+}. A retry put back in front, new classes, a new order or timeout drop the bound
 * until the next walk. Under the admission lock, through {@link PriorityQueues}.
 */
final class Headroom {
    /** What the bound must exceed: far above the rounding of the forecast's doubles. */
    static final double MARGIN_SECONDS = 1e-3;
    private boolean valid;
    private long at;
    private double rate;
    private double pace;
    private double least;
    private long kMax;
    private long kMin;
    private long answerMax;
    private long debt;

    /** A walk at {@code now} at {@code rate} and decode {@code pace} (seconds a token): nothing covered yet. */
    void restart(long now, double rate, double pace) {
        valid = rate > 0 && Double.isFinite(rate);
        at = now;
        this.rate = rate;
        this.pace = pace;
        least = Double.POSITIVE_INFINITY;
        kMax = Long.MIN_VALUE;
        kMin = Long.MAX_VALUE;
        answerMax = 0;
        debt = 0;
    }

    void invalidate() {
        valid = false;
    }

    boolean valid() {
        return valid;
    }

    /** Covers queued {@code t}, with {@code through} prompt tokens served before it and its own. */
    void cover(Ticket t, long through) {
        if (!valid) {
            return;
        }
        long k = through - debt;
        double held = seconds(at, t.waitDeadline) - k / rate - pace * t.answerTokens;
        if (!(held == held)) {
            valid = false;
            return;
        }
        least = Math.min(least, held);
        kMax = Math.max(kMax, k);
        kMin = Math.min(kMin, k);
        answerMax = Math.max(answerMax, t.answerTokens);
    }

    /** Something may serve up to {@code tokens} more prompt tokens before some queued request. */
    void owe(long tokens) {
        if (valid && tokens > 0) {
            debt = Nanos.plus(debt, tokens); // saturating: a huge debt only fails the bound
        }
    }

    /**
     * Whether every covered request still gets its first token before its deadline at {@code now},
     * with the prefill workers holding {@code remaining} tokens at {@code rate'}, a margin of
     * {@code slack} seconds and a decode pace of {@code pace'} seconds a token.
     */
    boolean holds(long now, double remaining, double rateNow, double slack, double paceNow) {
        if (!valid || !(rateNow > 0) || !Double.isFinite(rateNow)) {
            return false;
        }
        if (kMax < kMin) {
            return true; // nothing queued was covered: nothing queued
        }
        double d = 1 / rateNow - 1 / rate;
        double spare = least - seconds(at, now) - (remaining + debt) / rateNow - slack
                - (d > 0 ? kMax * d : kMin * d) - answerMax * Math.max(0, paceNow - pace);
        return spare > MARGIN_SECONDS;
    }

    /** Seconds from {@code from} to {@code to}, nanosecond instants (no overflow for "never"). */
    private static double seconds(long from, long to) {
        long d = to - from;
        boolean overflow = ((to ^ from) & (to ^ d)) < 0;
        return (overflow ? (double) to - (double) from : (double) d) / 1e9;
    }
}
