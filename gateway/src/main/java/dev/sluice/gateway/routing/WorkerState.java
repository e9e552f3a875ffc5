package dev.sluice.gateway.routing;

import java.util.Locale;

/**
 * The one state a worker is in, decided by {@code health.WorkerHealth} from active checks,
 * passive signals of live traffic and telemetry. Routing, admission, readiness, metrics and
 * {@code /admin/state} all read it.
 */
public enum WorkerState {
    /** Takes new work. */
    HEALTHY,
    /** Alive but takes no new work for now (e.g. its KV cache is nearly full); admission waits for another. */
    DEGRADED,
    /** Out of rotation: failed active checks, or passive signals past the threshold (until its back-off ends). */
    EJECTED,
    /** Back from an ejection on trial: takes a limited number of requests; their outcome decides. */
    HALF_OPEN,
    /**
     * Stalled requests while its health checks pass, and its role has no other worker to go to:
     * the gateway's panic mode. No client request goes to it: each is refused at once (503 with a
     * Retry-After until the next probe) instead of waiting out the stall watchdog on it, while the
     * gateway probes the pair with its own small generation, spaced by an exponential back-off. The
     * first probe that succeeds makes it healthy again.
     */
    SUSPECT,
    /** Leaving (removed from the config): no new work, in-flight requests finish. */
    DRAINING;

    /** The bounded {@code state} label of {@code sluice_worker_state}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Counts as capacity for readiness and for "is there any worker at all" (a degraded worker
     * will take work again soon, so requests queue for it instead of being refused; a suspect one
     * is not capacity: requests are refused rather than queued behind a stall).
     */
    public boolean available() {
        return this == HEALTHY || this == DEGRADED || this == HALF_OPEN;
    }
}
