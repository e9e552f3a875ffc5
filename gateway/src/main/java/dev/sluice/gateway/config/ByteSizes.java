package dev.sluice.gateway.config;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses byte sizes such as {@code 32MiB}, {@code 512KiB}, {@code 1048576}. */
public final class ByteSizes {
    /** What a byte size looks like, as a regular expression (also the JSON Schema's {@code pattern}). */
    public static final String REGEX = "^\\s*(\\d+)\\s*(B|KiB|MiB|GiB|KB|MB|GB)?\\s*$";
    private static final Pattern PATTERN = Pattern.compile(REGEX);

    private ByteSizes() {
    }

    public static long parse(String text) {
        Matcher m = PATTERN.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a byte size: '" + text + "' (expected: e.g. 32MiB, 512KiB, 1048576)");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "B" : m.group(2);
        return switch (unit) {
            case "KiB" -> n << 10;
            case "MiB" -> n << 20;
            case "GiB" -> n << 30;
            case "KB" -> n * 1000;
            case "MB" -> n * 1000_000;
            case "GB" -> n * 1000_000_000;
            default -> n;
        };
    }

    /** Renders a size the way the config file writes it: the largest binary unit that divides it. */
    public static String format(long bytes) {
        if (bytes > 0 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "GiB";
        }
        if (bytes > 0 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "MiB";
        }
        if (bytes > 0 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "KiB";
        }
        return String.valueOf(bytes);
    }
}
