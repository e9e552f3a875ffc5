package dev.sluice.testbed.load;

import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A class of clients ({@code --class NAME:SHARE:PATIENCE}): {@code share} of the requests belong to
 * it, each of its clients gives up {@code patience} after sending when no first token came, and its
 * TTFT objective is that same patience. Through the gateway its requests carry
 * {@code X-Sluice-Priority: NAME}.
 */
public record ClientClass(String name, double share, Duration patience) {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]+");

    public ClientClass {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(patience, "patience");
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("--class name: '" + name + "' (expected: letters, digits, _ . -)");
        }
        if (!(share > 0 && share <= 1)) {
            throw new IllegalArgumentException("--class " + name + ": share " + share + " (expected: > 0 and <= 1)");
        }
        if (patience.isZero() || patience.isNegative()) {
            throw new IllegalArgumentException("--class " + name + ": patience " + patience + " (expected: > 0)");
        }
    }

    /** Parses {@code NAME:SHARE:PATIENCE}, e.g. {@code interactive:0.3:15s}, with the CLI's duration syntax. */
    public static ClientClass parse(String spec, java.util.function.Function<String, Duration> durations) {
        String[] parts = spec.split(":");
        if (parts.length != 3) {
            throw new IllegalArgumentException("--class: '" + spec + "' (expected: NAME:SHARE:PATIENCE, e.g. "
                    + "interactive:0.3:15s)");
        }
        double share;
        try {
            share = Double.parseDouble(parts[1]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--class " + parts[0] + ": share '" + parts[1] + "' (expected: a number)");
        }
        Duration patience;
        try {
            patience = durations.apply(parts[2]);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("--class " + parts[0] + ": patience '" + parts[2]
                    + "' (expected: a duration, e.g. 15s)");
        }
        return new ClientClass(parts[0], share, patience);
    }
}
