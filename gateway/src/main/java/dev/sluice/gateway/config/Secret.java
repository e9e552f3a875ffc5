package dev.sluice.gateway.config;

import java.util.Objects;

/**
 * A credential read from the environment or a file of its own (never from the configuration file):
 * the Redis password, the workers' API key, the admin token. It prints as {@code ***} in
 * every {@code toString}, log line and {@code check-config} output; only {@link #reveal} gives it.
 */
public final class Secret {
    private final String value;

    public Secret(String value) {
        this.value = Objects.requireNonNull(value, "value");
    }

    /** The value itself, for the one place that must send it. */
    public String reveal() {
        return value;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Secret s && s.value.equals(value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }

    @Override
    public String toString() {
        return "***";
    }
}
