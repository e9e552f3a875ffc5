package dev.sluice.testbed.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/** Parses {@code 500ms}, {@code 30s}, {@code 2m}, {@code 1h} (and ISO-8601 such as {@code PT30S}). */
public final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    private static final Pattern SIMPLE = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)");

    @Override
    public Duration convert(String value) {
        return parse(value);
    }

    public static Duration parse(String value) {
        String v = value.trim().toLowerCase(java.util.Locale.ROOT);
        Matcher m = SIMPLE.matcher(v);
        if (m.matches()) {
            double n = Double.parseDouble(m.group(1));
            double millis = switch (m.group(2)) {
                case "ms" -> n;
                case "s" -> n * 1_000;
                case "m" -> n * 60_000;
                default -> n * 3_600_000;
            };
            return Duration.ofNanos(Math.round(millis * 1_000_000));
        }
        if (v.equals("0")) {
            return Duration.ZERO;
        }
        try {
            return Duration.parse(value.trim().toUpperCase(java.util.Locale.ROOT));
        } catch (RuntimeException e) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a duration (expected e.g. 500ms, 30s, 2m)");
        }
    }
}
