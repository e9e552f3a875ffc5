package dev.sluice.gateway.pd;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Why a failed attempt is safe to try again on another pair: the bounded {@code reason} label of
 * {@code sluice_retries_total}, and what decides which workers the next pair avoids and what the
 * stopped attempt counts as. The one list of reasons.
 */
public enum RetryReason {
    /** No connection could be made: the worker never saw the request. */
    CONNECT,
    /** The keep-alive race: a pooled connection closed as we sent; the worker most likely never saw it. */
    STALE_CONNECTION,
    /** The worker said it is busy (429, a 503 for a full queue, or going away). */
    WORKER_BUSY,
    /** Someone else aborted the request on the worker (an abort finish with no status). */
    WORKER_ABORTED,
    /** The KV transfer between the pair failed. */
    KV_TRANSFER,
    /** The stall watchdog fired before the first token. */
    STALL,
    /** Health took a worker of the pair out of rotation while the request waited on it. */
    WORKER_EJECTED;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }

    /** What stopping the failed attempt counts as in {@code sluice_aborts_total}. */
    AbortCause abortCause() {
        return switch (this) {
            case STALL -> AbortCause.STALL;
            case WORKER_EJECTED -> AbortCause.WORKER_EJECTED;
            default -> AbortCause.PEER_FAILED;
        };
    }

    /** Every label, for exporting the counters at 0 from start-up. */
    public static List<String> labels() {
        return Arrays.stream(values()).map(RetryReason::label).toList();
    }
}
