package dev.sluice.gateway.config;

import java.time.Duration;

/**
 * The config builders' checks of one value, failing with Armeria's message form and the YAML key's
 * full name: {@code "admission.max_queued_requests: -1 (expected: >= 0)"}. The readers check the same
 * bounds first and report them with the file and line; these are the last line of defence for a
 * configuration built in code.
 */
final class KeyCheck {
    private KeyCheck() {
    }

    static int atLeast(String key, int value, int min) {
        if (value < min) {
            throw rejected(key, String.valueOf(value), ">= " + min);
        }
        return value;
    }

    static long atLeast(String key, long value, long min) {
        if (value < min) {
            throw rejected(key, String.valueOf(value), ">= " + min);
        }
        return value;
    }

    static int in(String key, int value, int min, int max) {
        if (value < min || value > max) {
            throw rejected(key, String.valueOf(value), "in [" + min + ", " + max + "]");
        }
        return value;
    }

    static double atLeast(String key, double value, double min) {
        if (!(value >= min)) { // NaN fails too
            throw rejected(key, ConfigNode.num(value), ">= " + ConfigNode.num(min));
        }
        return value;
    }

    static double in(String key, double value, double min, double max) {
        if (!(value >= min && value <= max)) {
            throw rejected(key, ConfigNode.num(value), "in [" + ConfigNode.num(min) + ", " + ConfigNode.num(max) + "]");
        }
        return value;
    }

    static Duration atLeast(String key, Duration value, Duration min) {
        present(key, value);
        if (value.compareTo(min) < 0) {
            throw rejected(key, Durations.format(value), ">= " + Durations.format(min));
        }
        return value;
    }

    /** A duration bounded by another key's value: {@code "x.max: 1s (expected: >= x.min (2s))"}. */
    static Duration atLeast(String key, Duration value, String minKey, Duration min) {
        if (value.compareTo(min) < 0) {
            throw rejected(key, Durations.format(value), ">= " + minKey + " (" + Durations.format(min) + ")");
        }
        return value;
    }

    /** A value a setter was given: null is a caller's mistake, named by its key. */
    static <T> T present(String key, T value) {
        if (value == null) {
            throw new NullPointerException(key);
        }
        return value;
    }

    /** A value build() needs: not set is a mistake of the code that builds, not of the file. */
    static <T> T set(String key, T value) {
        if (value == null) {
            throw new IllegalStateException(key + ": not set (expected: a value before build())");
        }
        return value;
    }

    static IllegalArgumentException rejected(String key, String actual, String expected) {
        return new IllegalArgumentException(key + ": " + actual + " (expected: " + expected + ")");
    }
}
