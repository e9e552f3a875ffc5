package dev.sluice.gateway.upstream;

/**
 * Why a call to a worker did not complete.
 *
 * @param reusedConnectionClosed a pooled connection that had served an earlier request closed before
 *                               any byte of the answer came: the keep-alive race (the worker closed
 *                               it as idle while we sent), so the worker most likely never saw the request
 */
public record UpstreamFailure(Kind kind, String detail, boolean reusedConnectionClosed) {

    public UpstreamFailure(Kind kind, String detail) {
        this(kind, detail, false);
    }

    /** Also the bounded {@code kind} label of {@code sluice_upstream_errors_total}. */
    public enum Kind {
        /** No connection could be made (refused, connect timeout, pool exhausted past the connect timeout). */
        CONNECT,
        /** The connection closed or reset before the response completed. */
        RESET,
        /** The bytes were not a valid HTTP response. */
        MALFORMED
    }

    public String label() {
        return kind.name().toLowerCase(java.util.Locale.ROOT);
    }
}
