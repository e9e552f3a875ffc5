package dev.sluice.gateway.health;

import java.util.Locale;

/**
 * What went wrong with a worker, as health counts it. Only the worker's own faults are here: a
 * client's bad request (a 4xx) is never a worker failure, or one context-length error could eject
 * a fleet (sglang #25811).
 */
public enum FailureKind {
    /** No connection could be made. */
    CONNECT,
    /** A 5xx answer, an error event in a stream, a reset connection or a malformed response. */
    SERVER_ERROR,
    /** A deadline passed while the worker held the request. */
    TIMEOUT,
    /** The worker reported a KV transfer failure ({@code KVTransferError}). */
    KV_TRANSFER,
    /** The stall watchdog: no progress long after it was due. */
    STALL,
    /** An active {@code GET /health} check failed. */
    ACTIVE_HEALTH,
    /** An active {@code GET /health_generate} check failed. */
    ACTIVE_GENERATE;

    /** The bounded {@code reason} label of {@code sluice_worker_ejections_total}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    boolean active() {
        return this == ACTIVE_HEALTH || this == ACTIVE_GENERATE;
    }
}
