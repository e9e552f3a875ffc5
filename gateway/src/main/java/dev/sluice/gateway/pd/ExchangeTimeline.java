package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.config.TimeoutsConfig;

/**
 * One request's moments and the deadlines they imply. The request's own (received, its first
 * token ever, for the TTFT metric and the log) and the current attempt's (dispatched, prefill
 * done, first token, last chunk), which every retry starts afresh. Two kinds of deadline: the
 * client's ({@code timeouts.request}, {@code timeouts.first_token}), and the stall watchdog's,
 * which catches a worker that stopped making progress long before those: a prefill far past its
 * expected time ({@code health.watchdog}), a decode silent after its prefill finished, a started
 * stream idle for {@code timeouts.idle_stream}. Event-loop confined.
 */
final class ExchangeTimeline {
    /** Which deadline passed. */
    enum Kind {
        REQUEST, FIRST_TOKEN, PREFILL_STALL, DECODE_STALL, IDLE_STREAM
    }

    /** A deadline that passed: what the client is told and the abort cause it is counted under. */
    record Expiry(Kind kind, ApiError error, AbortCause abortCause) {
    }

    private static final long NEVER = Long.MAX_VALUE / 4;

    private final long receivedNanos;
    private final TimeoutsConfig timeouts;
    private final HealthConfig.Watchdog watchdog;
    private final boolean stream;
    /** The request's first token, whichever attempt gave it; 0 before. */
    private long requestFirstTokenNanos;
    // the current attempt's moments: all 0 while the request waits for a (new) pair
    private long dispatchedNanos;
    private long prefillDoneNanos;
    private long firstTokenNanos;
    private long lastChunkNanos;
    private long prefillStallNanos;
    private long decodeStallNanos;

    ExchangeTimeline(long receivedNanos, TimeoutsConfig timeouts, HealthConfig.Watchdog watchdog, boolean stream) {
        this.receivedNanos = receivedNanos;
        this.timeouts = timeouts;
        this.watchdog = watchdog;
        this.stream = stream;
    }

    long receivedNanos() {
        return receivedNanos;
    }

    /**
     * An attempt was sent; its prefill is expected to take {@code expectedPrefillNanos}.
     * {@code watchPrefill}: whether the end of the prefill will be seen at all (not for a whole
     * answer from a unified worker, which shows nothing until it is complete).
     */
    void attemptStarted(long now, long expectedPrefillNanos, boolean watchPrefill) {
        dispatchedNanos = now;
        prefillDoneNanos = 0;
        firstTokenNanos = 0;
        lastChunkNanos = 0;
        long expected = (long) (watchdog.prefillFactor() * expectedPrefillNanos);
        prefillStallNanos = !watchPrefill ? NEVER : Math.max(watchdog.prefillFloor().toNanos(), expected);
        decodeStallNanos = watchdog.firstTokenAfterPrefill().toNanos();
    }

    /**
     * The attempt's stream may be waiting in the decode for a slot at {@code now} (the decode lookahead:
     * its rank's running cap filled by streams that started): the decode watchdog's wait starts again
     * from now, to be checked again then.
     */
    void decodeMayWait(long now) {
        decodeStallNanos = now - prefillDoneNanos + watchdog.firstTokenAfterPrefill().toNanos();
    }

    /** The attempt was given up (a retry follows): no attempt deadlines until the next one starts. */
    void attemptEnded() {
        dispatchedNanos = 0;
        prefillDoneNanos = 0;
        firstTokenNanos = 0;
        lastChunkNanos = 0;
    }

    /** When the current attempt's prefill was seen done, or 0. */
    long prefillDoneNanos() {
        return prefillDoneNanos;
    }

    void prefillDone(long now) {
        if (prefillDoneNanos == 0) {
            prefillDoneNanos = now;
        }
    }

    /** The current attempt's first token; true if it is the request's first (the TTFT moment). */
    boolean firstToken(long now) {
        boolean first = firstTokenNanos == 0;
        if (first) {
            firstTokenNanos = now;
            lastChunkNanos = now;
        }
        if (requestFirstTokenNanos == 0) {
            requestFirstTokenNanos = now;
            return true;
        }
        return false;
    }

    /** A chunk was relayed at {@code now}: the gap since the last one in nanoseconds, or -1 for the first. */
    long chunkRelayed(long now) {
        long gap = lastChunkNanos != 0 && now > lastChunkNanos && now > firstTokenNanos ? now - lastChunkNanos : -1;
        lastChunkNanos = now;
        return gap;
    }

    /** The client drained after backpressure: the idle clock restarts (the worker was held, not idle). */
    void clientResumed(long now) {
        lastChunkNanos = now;
    }

    /** Whether the current attempt has produced its first token. */
    boolean pastFirstToken() {
        return firstTokenNanos != 0;
    }

    /** Whether the current attempt's prefill was seen to finish. */
    boolean prefillSeenDone() {
        return prefillDoneNanos != 0;
    }

    /** Time to the request's first token in milliseconds, or -1 if it had none. */
    long ttftMillis() {
        return requestFirstTokenNanos == 0 ? -1 : (requestFirstTokenNanos - receivedNanos) / 1_000_000;
    }

    /** When the next deadline falls, given whether the client's response has ended. */
    long nextDeadline(boolean clientEnded) {
        long next = receivedNanos + timeouts.request().toNanos();
        if (firstTokenNanos == 0 && dispatchedNanos != 0) {
            next = Math.min(next, dispatchedNanos + timeouts.firstToken().toNanos());
            if (prefillDoneNanos == 0) {
                next = Math.min(next, dispatchedNanos + prefillStallNanos);
            } else if (stream) {
                next = Math.min(next, prefillDoneNanos + decodeStallNanos);
            }
        } else if (firstTokenNanos != 0 && stream && !clientEnded) {
            next = Math.min(next, lastChunkNanos + timeouts.idleStream().toNanos());
        }
        return next;
    }

    /** The deadline that has passed at {@code now}, or null. */
    Expiry expired(long now, boolean clientEnded) {
        if (now - receivedNanos >= timeouts.request().toNanos()) {
            return new Expiry(Kind.REQUEST, ApiError.timeout("request exceeded timeouts.request="
                    + timeouts.request().toMillis() + " ms"), AbortCause.TIMEOUT);
        }
        if (firstTokenNanos == 0 && dispatchedNanos != 0) {
            if (now - dispatchedNanos >= timeouts.firstToken().toNanos()) {
                return new Expiry(Kind.FIRST_TOKEN, ApiError.timeout("no first token within timeouts.first_token="
                        + timeouts.firstToken().toMillis() + " ms"), AbortCause.TIMEOUT);
            }
            if (prefillDoneNanos == 0 && now - dispatchedNanos >= prefillStallNanos) {
                return new Expiry(Kind.PREFILL_STALL, ApiError.timeout("prefill stalled: not finished "
                        + prefillStallNanos / 1_000_000 + " ms after dispatch (health.watchdog)"), AbortCause.STALL);
            }
            if (prefillDoneNanos != 0 && stream && now - prefillDoneNanos >= decodeStallNanos) {
                return new Expiry(Kind.DECODE_STALL, ApiError.timeout("decode stalled: no first token "
                        + decodeStallNanos / 1_000_000 + " ms after the prefill finished "
                        + "(health.watchdog.first_token_after_prefill)"), AbortCause.STALL);
            }
        }
        if (firstTokenNanos != 0 && stream && !clientEnded && now - lastChunkNanos >= timeouts.idleStream().toNanos()) {
            return new Expiry(Kind.IDLE_STREAM, ApiError.timeout("decode stream idle longer than timeouts.idle_stream="
                    + timeouts.idleStream().toMillis() + " ms"), AbortCause.STALL);
        }
        return null;
    }
}
