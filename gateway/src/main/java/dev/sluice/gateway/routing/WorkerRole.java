package dev.sluice.gateway.routing;

import java.util.Locale;

/** Which half of a disaggregated request a worker serves, or both (a unified, non-PD worker). */
public enum WorkerRole {
    PREFILL,
    DECODE,
    /** {@code disaggregation: none}: prefills and decodes itself; stands in both roles. */
    UNIFIED;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }
}
