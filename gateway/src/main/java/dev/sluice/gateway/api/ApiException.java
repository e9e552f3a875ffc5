package dev.sluice.gateway.api;

/** Thrown while parsing a request; carries the error the client gets. */
public final class ApiException extends Exception {
    private static final long serialVersionUID = 1L;
    private final transient ApiError error;

    public ApiException(ApiError error) {
        super(error.message(), null, false, false);
        this.error = error;
    }

    public ApiError error() {
        return error;
    }
}
