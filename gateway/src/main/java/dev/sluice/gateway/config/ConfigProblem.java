package dev.sluice.gateway.config;

import java.util.Objects;

/**
 * One thing wrong with a configuration: {@code text} in Armeria's form, naming the key, the value
 * and what was expected ({@code "timeouts.connect: -1s (expected: a duration such as 500ms, 30s, 2m)"}),
 * and where it came from ({@code "gateway.yaml:12"}, {@code "env SLUICE_LISTEN_PORT"},
 * {@code "--set listen.port=x"}), or empty when no place in the input is to blame.
 */
public record ConfigProblem(String path, String text, String origin) {
    public ConfigProblem {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(text, "text");
        Objects.requireNonNull(origin, "origin");
    }

    /** The problem with its origin in front, as a command line prints it. */
    public String located() {
        return origin.isEmpty() ? text : origin + ": " + text;
    }

    @Override
    public String toString() {
        return text;
    }
}
