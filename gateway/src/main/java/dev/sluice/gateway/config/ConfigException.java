package dev.sluice.gateway.config;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A configuration that cannot be read or does not validate. It carries every problem found, in
 * the order of the file; the message is their texts, one a line (a single problem's message is
 * just its text: {@code "listen.port: 70000 (expected: an integer in [0, 65535])"}).
 */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient List<ConfigProblem> problems;

    public ConfigException(String message) {
        super(message);
        this.problems = List.of(new ConfigProblem("", message, ""));
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
        this.problems = List.of(new ConfigProblem("", message, ""));
    }

    /** All of {@code problems} at once; there must be at least one. */
    public ConfigException(List<ConfigProblem> problems) {
        super(problems.stream().map(ConfigProblem::text).collect(Collectors.joining("\n")));
        if (problems.isEmpty()) {
            throw new IllegalArgumentException("no problems");
        }
        this.problems = List.copyOf(problems);
    }

    /** Every problem found, in file order (problems from overrides last). */
    public List<ConfigProblem> problems() {
        return problems;
    }
}
