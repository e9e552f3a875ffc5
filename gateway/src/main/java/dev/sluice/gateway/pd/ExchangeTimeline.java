package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.config.TimeoutsConfig;

/**
 * One request's moments (received, dispatched, first token, last chunk) and the deadlines they
 * imply: {@code first_token} until the first token, {@code idle_stream} between the chunks of a
 * started stream, {@code request} for the whole life. Event-loop confined.
 */
final class ExchangeTimeline {
    /** A deadline that passed: what the client is told and the abort cause it is counted under. */
    record Expiry(ApiError error, String abortCause) {
    }

    final long receivedNanos;
    long dispatchedNanos;
    long firstTokenNanos;
    long lastChunkNanos;
    private final TimeoutsConfig timeouts;
    private final boolean stream;

    ExchangeTimeline(long receivedNanos, TimeoutsConfig timeouts, boolean stream) {
        this.receivedNanos = receivedNanos;
        this.timeouts = timeouts;
        this.stream = stream;
    }

    boolean pastFirstToken() {
        return firstTokenNanos != 0;
    }

    /** When the next deadline falls, given whether the client's response has ended. */
    long nextDeadline(boolean clientEnded) {
        long whole = receivedNanos + timeouts.request().toNanos();
        long phase = firstTokenNanos == 0
                ? dispatchedNanos + timeouts.firstToken().toNanos()
                : stream && !clientEnded ? lastChunkNanos + timeouts.idleStream().toNanos() : whole;
        return Math.min(whole, phase);
    }

    /** The deadline that has passed at {@code now}, or null. */
    Expiry expired(long now, boolean clientEnded) {
        if (now - receivedNanos >= timeouts.request().toNanos()) {
            return new Expiry(ApiError.timeout("request exceeded timeouts.request=" + timeouts.request().toMillis()
                    + " ms"), "timeout");
        }
        if (firstTokenNanos == 0 && now - dispatchedNanos >= timeouts.firstToken().toNanos()) {
            return new Expiry(ApiError.timeout("no first token within timeouts.first_token="
                    + timeouts.firstToken().toMillis() + " ms"), "timeout");
        }
        if (firstTokenNanos != 0 && stream && !clientEnded && now - lastChunkNanos >= timeouts.idleStream().toNanos()) {
            return new Expiry(ApiError.timeout("decode stream idle longer than timeouts.idle_stream="
                    + timeouts.idleStream().toMillis() + " ms"), "stall");
        }
        return null;
    }
}
