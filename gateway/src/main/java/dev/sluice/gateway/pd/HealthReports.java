package dev.sluice.gateway.pd;

import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.routing.Worker;

/**
 * What one request tells health about its workers, all from one place: a half that did its part
 * is a success, an {@link AttemptFailure} counts against the worker it names (a client's error
 * names none), a stall suspects the worker (an immediate real-generation check; on a role's last
 * worker, the panic mode). The attempts only report; the exchange decides and calls this.
 */
final class HealthReports {
    private final HealthTable health;

    HealthReports(HealthTable health) {
        this.health = health;
    }

    void prefillSucceeded(AttemptKey k) {
        health.success(k.prefill());
    }

    void decodeSucceeded(AttemptKey k) {
        health.success(k.decode());
    }

    /**
     * The first token came: both halves made progress (a stall on either is over; a probe of a
     * suspect pair has proved it, with no wait for the end of its answer).
     */
    void firstToken(AttemptKey k) {
        health.progressed(k.prefill());
        if (k.decode() != k.prefill()) {
            health.progressed(k.decode());
        }
    }

    /** Counts {@code f} against its worker, if it names one and counts as something. */
    void failed(AttemptFailure f) {
        if (f.culprit() != null && f.kind() != null) {
            health.failure(f.culprit(), f.kind(), f.error().message());
        }
    }

    void stalled(Worker w, String detail) {
        health.suspect(w);
        health.stalled(w, detail);
    }
}
