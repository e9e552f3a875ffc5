package dev.sluice.gateway.routing;

import java.util.Locale;

/** Which half of a disaggregated request a worker serves. */
public enum WorkerRole {
    PREFILL,
    DECODE;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }
}
