package dev.sluice.gateway.api;

import java.util.Locale;

/** How a request ended; the bounded {@code outcome} label of {@code sluice_requests_total}. */
public enum Outcome {
    OK,
    BAD_REQUEST,
    REJECTED,
    UPSTREAM_ERROR,
    TIMEOUT,
    CLIENT_DISCONNECT,
    INTERNAL_ERROR;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }
}
