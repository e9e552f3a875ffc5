package dev.sluice.gateway.upstream;

/** No connection to a worker could be had. */
final class UpstreamConnectException extends Exception {
    private static final long serialVersionUID = 1L;

    UpstreamConnectException(String message) {
        super(message, null, false, false);
    }
}
