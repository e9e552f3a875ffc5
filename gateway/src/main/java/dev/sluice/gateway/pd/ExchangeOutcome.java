package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.Outcome;

/**
 * How a request ended, as its metrics and log line say it: the first cause of its end is the one it
 * is remembered by (a client that leaves after a worker failed stays a worker failure). Event-loop
 * confined.
 */
final class ExchangeOutcome {
    private Outcome outcome = Outcome.OK;
    private String detail = "";

    /** Records {@code o} and why, unless an earlier cause was recorded. */
    void first(Outcome o, String why) {
        if (outcome == Outcome.OK) {
            outcome = o;
            detail = why;
        }
    }

    Outcome outcome() {
        return outcome;
    }

    String detail() {
        return detail;
    }
}
