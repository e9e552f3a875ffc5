package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.sluice.gateway.config.ConfigKey.Type;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;

/**
 * The typed getters of {@link ConfigNode} for numbers, booleans, byte sizes and durations: each
 * records its key's type, bounds and default in the model, parses and bounds the value (a bad one
 * is reported and the default kept), and records the value in force. {@link ConfigNode} forwards
 * to these so that readers keep writing {@code n.child("port", ...).intIn(8080, 0, 65535)}.
 */
final class ConfigScalars {
    private ConfigScalars() {
    }

    /** An integer in [min, max]; absent or bad: {@code def}. */
    static int intIn(ConfigNode n, int def, int min, int max) {
        return (int) integer(n, (long) def, min, max).longValue();
    }

    /** An integer that may be absent (no default: absent means "the worker's own"). */
    static Optional<Integer> optionalInt(ConfigNode n, int min, int max) {
        return Optional.ofNullable(integer(n, null, min, max)).map(Long::intValue);
    }

    static long longIn(ConfigNode n, long def, long min, long max) {
        return integer(n, def, min, max);
    }

    /** An integer in [min, max]; {@code def} null: optional, absent (or bad) gives null. */
    private static Long integer(ConfigNode n, Long def, long min, long max) {
        boolean small = min >= Integer.MIN_VALUE && max <= Integer.MAX_VALUE;
        n.key().type(Type.INTEGER).range(min, max >= Long.MAX_VALUE / 4 ? null : max, words(min, max))
                .defaultValue(def == null ? null : small ? IntNode.valueOf(def.intValue()) : LongNode.valueOf(def));
        Long v = def;
        if (!n.isMissing()) {
            String expected = "an integer in [" + min + ", " + max + "]";
            if (!n.json().isIntegralNumber() || !n.json().canConvertToLong()) {
                n.reject(ConfigNode.describe(n.json()), expected);
            } else if (n.json().asLong() < min || n.json().asLong() > max) {
                n.reject(String.valueOf(n.json().asLong()), expected);
            } else {
                v = n.json().asLong();
            }
        }
        if (v != null) {
            n.inForce(small ? IntNode.valueOf(v.intValue()) : LongNode.valueOf(v));
        }
        return v;
    }

    static boolean bool(ConfigNode n, boolean def) {
        n.key().type(Type.BOOLEAN).defaultValue(BooleanNode.valueOf(def));
        boolean v = def;
        if (!n.isMissing()) {
            if (n.json().isBoolean()) {
                v = n.json().booleanValue();
            } else {
                n.reject(ConfigNode.describe(n.json()), "true or false");
            }
        }
        n.inForce(BooleanNode.valueOf(v));
        return v;
    }

    static double doubleAtLeast(ConfigNode n, double def, double min) {
        return doubleIn(n, def, min, Double.NaN, "a number >= " + min);
    }

    /** A number in [min, max] ({@code max} NaN: no upper bound); {@code expected} is the message's wording. */
    static double doubleIn(ConfigNode n, double def, double min, double max, String expected) {
        String words = Double.isNaN(max) ? ">= " + ConfigNode.num(min) : ConfigNode.num(min) + " to " + ConfigNode.num(max);
        n.key().type(Type.NUMBER).range(min, Double.isNaN(max) ? null : max, words).defaultValue(DoubleNode.valueOf(def));
        double v = def;
        if (!n.isMissing()) {
            if (!n.json().isNumber() || n.json().asDouble() < min || n.json().asDouble() > max) {
                n.reject(ConfigNode.describe(n.json()), expected);
            } else {
                v = n.json().asDouble();
            }
        }
        n.inForce(DoubleNode.valueOf(v));
        return v;
    }

    static long bytesAtLeast(ConfigNode n, long def, long min) {
        n.key().type(Type.BYTE_SIZE).range(min, null, ">= " + ByteSizes.format(min))
                .defaultValue(TextNode.valueOf(ByteSizes.format(def)));
        long v = parsed(n, def, t -> n.json().isIntegralNumber() ? n.json().asLong() : ByteSizes.parse(t),
                "a byte size such as 32MiB, 512KiB, 1048576");
        if (v < min) {
            n.reject(n.json().asText(), "a byte size >= " + min);
            v = def;
        }
        n.inForce(TextNode.valueOf(ByteSizes.format(v)));
        return v;
    }

    /** An optional memory budget: a byte size of at least {@code min}, or a heap percentage in (0, 100]. */
    static java.util.Optional<MemoryBudget> optionalMemoryBudget(ConfigNode n, long min) {
        n.key().type(Type.MEMORY_BUDGET);
        if (n.isMissing()) {
            return java.util.Optional.empty();
        }
        String expected = "a byte size >= " + ByteSizes.format(min) + " such as 512MiB, or a share of the heap "
                + "such as 25%";
        try {
            MemoryBudget b = n.json().isIntegralNumber() ? new MemoryBudget(n.json().asLong(), 0)
                    : MemoryBudget.parse(n.json().asText());
            if (b.bytes() > 0 && b.bytes() < min) {
                n.reject(n.json().asText(), expected);
                return java.util.Optional.empty();
            }
            n.inForce(b.format());
            return java.util.Optional.of(b);
        } catch (IllegalArgumentException e) {
            n.reject(n.json().asText(), expected);
            return java.util.Optional.empty();
        }
    }

    static Duration durationAtLeast(ConfigNode n, Duration def, Duration min) {
        n.key().type(Type.DURATION).range(null, null, ">= " + Durations.format(min))
                .defaultValue(TextNode.valueOf(Durations.format(def)));
        return checkedDuration(n, def, min, Durations.format(min));
    }

    /** A duration no shorter than another key's value ({@code minKey}, read before as {@code min}). */
    static Duration durationAtLeast(ConfigNode n, Duration def, Duration min, String minKey) {
        n.key().type(Type.DURATION).range(null, null, ">= " + minKey)
                .defaultValue(TextNode.valueOf(Durations.format(def)));
        return checkedDuration(n, def, min, minKey + " (" + Durations.format(min) + ")");
    }

    private static Duration checkedDuration(ConfigNode n, Duration def, Duration min, String minWords) {
        if (n.isMissing() && def.compareTo(min) < 0) {
            // a default below a bound set by another key (max_ejection under a longer base_ejection) follows it
            n.inForce(TextNode.valueOf(Durations.format(min)));
            return min;
        }
        Duration v = parsed(n, def, Durations::parse, "a duration such as 500ms, 30s, 2m");
        if (v.compareTo(min) < 0) {
            n.reject(n.json().asText(), "a duration >= " + minWords);
            v = def.compareTo(min) < 0 ? min : def;
        }
        n.inForce(TextNode.valueOf(Durations.format(v)));
        return v;
    }

    private static <T> T parsed(ConfigNode n, T def, Function<String, T> parser, String expected) {
        if (n.isMissing()) {
            return def;
        }
        if (!n.json().isValueNode()) {
            n.reject(ConfigNode.describe(n.json()), expected);
            return def;
        }
        try {
            return parser.apply(n.json().asText());
        } catch (IllegalArgumentException e) {
            n.reject(n.json().asText(), expected);
            return def;
        }
    }

    private static String words(long min, long max) {
        return max >= Long.MAX_VALUE / 4 ? ">= " + min : min + " to " + max;
    }
}
