package dev.sluice.gateway.api;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;

/** Headers of an error answer: the rejection reason and an honest {@code Retry-After}. */
public final class ErrorHeaders {
    /** Names the admission reason of a rejection ({@code queue_full}, {@code draining}, ...). */
    public static final String REJECT_REASON = "X-Sluice-Reject-Reason";

    private ErrorHeaders() {
    }

    public static void apply(HttpHeaders headers, ApiError error) {
        if (error.outcome() == Outcome.REJECTED) {
            headers.set(REJECT_REASON, error.code());
        }
        if (error.status().code() == 401) {
            headers.set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        }
        if (error.retryAfterSeconds() > 0) {
            headers.set(HttpHeaderNames.RETRY_AFTER, error.retryAfterSeconds());
        }
    }
}
