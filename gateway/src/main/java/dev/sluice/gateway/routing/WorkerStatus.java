package dev.sluice.gateway.routing;

import java.time.Instant;
import java.util.Objects;

/**
 * A worker's state with why and since when, as one immutable value (published by the health
 * table, read without locks by everyone else).
 */
public record WorkerStatus(WorkerState state, String reason, Instant since) {
    public static final WorkerStatus STARTING = new WorkerStatus(WorkerState.EJECTED, "awaiting its first health check",
            Instant.EPOCH);

    /**
     * Whether the worker has no verdict yet: no check passed and none failed enough to eject it (readiness
     * waits for every pool's first verdicts before it counts a pool out).
     */
    public boolean awaitingFirstCheck() {
        return state == WorkerState.EJECTED && reason.equals(STARTING.reason());
    }

    public WorkerStatus {
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(since, "since");
    }
}
