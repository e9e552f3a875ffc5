package dev.sluice.gateway.admission;

/**
 * How much work (in seconds at its worker's rate) a prefill worker still held when a request that
 * had waited in the queue was dispatched to it: the window's lead. A queued request is not
 * dispatched when everything ahead of it is done but when what is left of it fits in a window (the
 * window in time, {@code prefill.max_inflight_time}; or the previous request's end, with a window
 * of one request), so its wait is the work ahead minus this lead. Exponentially weighted over the
 * last few such dispatches; until one is seen, the configured window in time (0 while the rates are
 * only guessed: the window in time does not bind then). Under the admission lock.
 */
final class DispatchLead {
    private static final double WEIGHT = 0.2;
    private double seconds;
    private boolean seen;

    /** A request that had waited was dispatched to a worker that would be done with its work in {@code heldSeconds}. */
    void observed(double heldSeconds) {
        if (!Double.isFinite(heldSeconds) || heldSeconds < 0) {
            return;
        }
        seconds = seen ? seconds + WEIGHT * (heldSeconds - seconds) : heldSeconds;
        seen = true;
    }

    /** The lead in seconds; {@code windowSeconds} (the configured window in time) until one is seen. */
    double seconds(double windowSeconds) {
        return seen ? seconds : windowSeconds;
    }
}
