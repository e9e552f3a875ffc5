package dev.sluice.gateway.pd;

import dev.sluice.gateway.routing.Worker;

/**
 * A request in flight, as the rest of the gateway reaches it: health fails it over when a worker it
 * waits on is ejected, the drain stops it when the grace period is over. Both may be called from
 * any thread; the request hops to its own event loop.
 */
public interface InFlight {
    /** Health took {@code w} out of rotation. */
    void workerEjected(Worker w);

    /** The operator deleted {@code w} ({@code DELETE /admin/workers/{id}}): stop or fail over what runs on it. */
    void workerRemoved(Worker w);

    /**
     * The drain grace period is over (the gateway's, or that of a pool a reload removed): stop the request (both
     * halves) and tell the client {@code why} (503 {@code draining}).
     */
    void abortOnDrain(String why);
}
