package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.Worker;

/** Told, on the ticket's own executor, how its wait ended. */
public interface TicketListener {
    /** Dispatch now, to this pair; the window slots are already reserved. */
    void granted(Worker prefill, Worker decode);

    /** Rejected after it was queued (timeout, eviction, drain). */
    void rejected(Rejection rejection);
}
