package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * A section of the YAML tree that knows its own path, so that every validation message names
 * the key it is about ({@code "timeouts.connect: -1s (expected: a duration > 0)"}).
 */
final class ConfigNode {
    private final JsonNode node;
    private final String path;

    ConfigNode(JsonNode node, String path) {
        this.node = node == null ? MissingNode.getInstance() : node;
        this.path = path;
    }

    String path() {
        return path;
    }

    boolean isMissing() {
        return node.isMissingNode() || node.isNull();
    }

    ConfigNode child(String key) {
        return new ConfigNode(node.get(key), path.isEmpty() ? key : path + "." + key);
    }

    /** Rejects keys this version does not know: a typo must not silently fall back to a default. */
    ConfigNode allowOnly(Set<String> keys) {
        if (isMissing()) {
            return this;
        }
        if (!node.isObject()) {
            throw fail(describe(node), "a mapping");
        }
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!keys.contains(k)) {
                throw new ConfigException((path.isEmpty() ? k : path + "." + k) + ": unknown key (expected one of: "
                        + String.join(", ", keys.stream().sorted().toList()) + ")");
            }
        }
        return this;
    }

    List<ConfigNode> items() {
        if (isMissing()) {
            return List.of();
        }
        if (!node.isArray()) {
            throw fail(describe(node), "a list");
        }
        List<ConfigNode> out = new ArrayList<>();
        for (int i = 0; i < node.size(); i++) {
            out.add(new ConfigNode(node.get(i), path + "[" + i + "]"));
        }
        return out;
    }

    String text(String def) {
        if (isMissing()) {
            return def;
        }
        if (!node.isValueNode()) {
            throw fail(describe(node), "a string");
        }
        return node.asText();
    }

    String requiredText() {
        if (isMissing()) {
            throw new ConfigException(path + ": missing (expected: a value)");
        }
        return text(null);
    }

    int intIn(int def, int min, int max) {
        if (isMissing()) {
            return def;
        }
        if (!node.canConvertToInt() || !node.isIntegralNumber()) {
            throw fail(describe(node), "an integer in [" + min + ", " + max + "]");
        }
        int v = node.asInt();
        if (v < min || v > max) {
            throw fail(String.valueOf(v), "an integer in [" + min + ", " + max + "]");
        }
        return v;
    }

    boolean bool(boolean def) {
        if (isMissing()) {
            return def;
        }
        if (!node.isBoolean()) {
            throw fail(describe(node), "true or false");
        }
        return node.booleanValue();
    }

    long longIn(long def, long min, long max) {
        if (isMissing()) {
            return def;
        }
        if (!node.isIntegralNumber() || !node.canConvertToLong()) {
            throw fail(describe(node), "an integer in [" + min + ", " + max + "]");
        }
        long v = node.asLong();
        if (v < min || v > max) {
            throw fail(String.valueOf(v), "an integer in [" + min + ", " + max + "]");
        }
        return v;
    }

    double doubleAtLeast(double def, double min) {
        if (isMissing()) {
            return def;
        }
        if (!node.isNumber() || node.asDouble() < min) {
            throw fail(describe(node), "a number >= " + min);
        }
        return node.asDouble();
    }

    /** The keys of a mapping (empty when missing). */
    List<String> keys() {
        if (isMissing()) {
            return List.of();
        }
        if (!node.isObject()) {
            throw fail(describe(node), "a mapping");
        }
        List<String> out = new ArrayList<>();
        node.fieldNames().forEachRemaining(out::add);
        return out;
    }

    Integer optionalInt(int min, int max) {
        return isMissing() ? null : intIn(0, min, max);
    }

    long bytesAtLeast(long def, long min) {
        long v = parsed(def, t -> node.isIntegralNumber() ? node.asLong() : ByteSizes.parse(t), "a byte size");
        if (v < min) {
            throw fail(node.asText(), "a byte size >= " + min);
        }
        return v;
    }

    Duration durationAtLeast(Duration def, Duration min) {
        Duration v = parsed(def, Durations::parse, "a duration such as 500ms, 30s, 2m");
        if (v.compareTo(min) < 0) {
            throw fail(node.asText(), "a duration >= " + Durations.format(min));
        }
        return v;
    }

    private <T> T parsed(T def, Function<String, T> parser, String expected) {
        if (isMissing()) {
            return def;
        }
        if (!node.isValueNode()) {
            throw fail(describe(node), expected);
        }
        try {
            return parser.apply(node.asText());
        } catch (IllegalArgumentException e) {
            throw fail(node.asText(), expected);
        }
    }

    ConfigException fail(String actual, String expected) {
        return new ConfigException(path + ": " + actual + " (expected: " + expected + ")");
    }

    private static String describe(JsonNode n) {
        return n.isContainerNode() ? n.getNodeType().name().toLowerCase() : n.asText();
    }
}
