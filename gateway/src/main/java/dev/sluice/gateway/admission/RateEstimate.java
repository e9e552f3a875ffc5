package dev.sluice.gateway.admission;

/**
 * The optimistic (upper) bound of one prefill worker's rate: the fastest it can be, given what the
 * gateway knows of it, and so the rate at which a request is judged before it is refused
 * ({@code admission.prefill_rate.early_rejection}). A refusal cannot be taken back, so it is made
 * only when the request's first token cannot come before its deadline even at this bound; the
 * request that might make it waits, and the point estimate still decides its dispatch.
 *
 * <p>Two kinds of evidence bound the rate from above:
 * <ul>
 * <li><b>The estimate.</b> A measured rate ({@link PrefillThroughput}, weighted over about ten
 * seconds of busy time) or a prior (configured, the worker's own counters, the state file) is
 * trusted as the bound, as it always was for the deadline checks. (A band above a prior would only
 * move a refusal from the door to the dispatch, whose check stays at the point estimate so that no
 * GPU computes for a client about to leave.)</li>
 * <li><b>The work in flight.</b> A worker busy for {@code T} seconds with prompt tokens still in
 * prefill has computed fewer than all the tokens dispatched to it in this busy period (else none
 * would be left): its rate is below {@code dispatched / T}. That holds with no prior at all and
 * tightens each second the first prefill of a burst runs, which is what lets a hopeless request be
 * refused seconds before the first prefill is measured. {@link #START_ALLOWANCE_SECONDS} are taken
 * off {@code T} for the time before the worker starts computing (the HTTP hop, the bootstrap
 * handshake), so a slow start cannot make the bound too low.</li>
 * </ul>
 * The bound is the smaller of the two; a worker with neither (only the guess, idle) has none
 * ({@code +Infinity}), and then no request is refused for its deadline, as before.
 */
final class RateEstimate {
    /** Busy time before a worker is taken to be computing what it was sent. */
    static final double START_ALLOWANCE_SECONDS = 0.5;

    private RateEstimate() {
    }

    /**
     * @param source         where the point estimate {@code rate} comes from
     * @param rate           the point estimate (measured, prior, or the guess)
     * @param periodTokens   prompt tokens dispatched to the worker in its current busy period (0: idle)
     * @param busySeconds    how long that busy period has lasted
     * @return the worker's rate at its optimistic bound, tokens per second; +Infinity if unbounded
     */
    static double upper(PrefillRates.Source source, double rate, long periodTokens, double busySeconds) {
        double band = source == PrefillRates.Source.GUESS ? Double.POSITIVE_INFINITY : rate;
        return Math.min(band, inFlight(periodTokens, busySeconds));
    }

    /** The bound from the work in flight: the tokens of the busy period over its computing time; +Infinity if too early. */
    static double inFlight(long periodTokens, double busySeconds) {
        double computing = busySeconds - START_ALLOWANCE_SECONDS;
        if (periodTokens <= 0 || !(computing > 0)) {
            return Double.POSITIVE_INFINITY;
        }
        return periodTokens / computing;
    }
}
