package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the human durations of the YAML file: {@code 500ms}, {@code 30s}, {@code 2m}, {@code 1h}. */
public final class Durations {
    /** What a duration looks like, as a regular expression (also the JSON Schema's {@code pattern}). */
    public static final String REGEX = "^\\s*(\\d+)\\s*(ms|s|m|h)\\s*$";
    private static final Pattern PATTERN = Pattern.compile(REGEX);

    private Durations() {
    }

    public static Duration parse(String text) {
        Matcher m = PATTERN.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a duration: '" + text + "' (expected: e.g. 500ms, 30s, 2m, 1h)");
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            default -> Duration.ofHours(n);
        };
    }

    /** Renders a duration the way the config file writes it. */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms % 3_600_000 == 0 && ms > 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms % 60_000 == 0 && ms > 0) {
            return ms / 60_000 + "m";
        }
        if (ms % 1000 == 0) {
            return ms / 1000 + "s";
        }
        return ms + "ms";
    }
}
