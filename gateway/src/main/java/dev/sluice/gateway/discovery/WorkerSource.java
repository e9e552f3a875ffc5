package dev.sluice.gateway.discovery;

import java.util.Locale;

/** Where a worker came from: shown in /admin/state, {@code status} and the log. */
public enum WorkerSource {
    /** The configuration file's list (today's static workers). */
    FILE,
    /** A DNS name re-resolved. */
    DNS,
    /** Pods watched through the Kubernetes API. */
    KUBERNETES,
    /** {@code POST /admin/workers}. */
    ADMIN;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }
}
