package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.sluice.gateway.config.ConfigKey.Type;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * A section of the YAML tree that knows its own path, so that every validation message names
 * the key it is about ({@code "timeouts.connect: -1s (expected: a duration >= 1ms)"}).
 *
 * <p>A typed getter that finds a bad value records the problem in its {@link ConfigReading} and
 * returns the default, so that reading goes on and one run reports every mistake in the file.
 * Each getter also records what it knows of its key (type, bounds, default, the description given
 * to {@link #child(String, String)}) in the reading's {@link ConfigModel}, and the value in force
 * in the effective configuration. Those of numbers, booleans, byte sizes and durations forward to
 * {@link ConfigScalars}; this class keeps the tree (children, lists, mappings, allowed keys), text
 * and enum values, and the reporting of problems.
 */
final class ConfigNode {
    private final JsonNode node;
    private final String path;
    private final String schemaPath;
    private final List<Object> segments;
    private final ConfigReading reading;

    private ConfigNode(JsonNode node, String path, String schemaPath, List<Object> segments, ConfigReading reading) {
        this.node = node == null ? MissingNode.getInstance() : node;
        this.path = path;
        this.schemaPath = schemaPath;
        this.segments = segments;
        this.reading = reading;
    }

    /** The root of a document ({@code path} empty) or a section read on its own ({@code "routing"}). */
    static ConfigNode root(JsonNode node, String path, ConfigReading reading) {
        return new ConfigNode(node, path, path, path.isEmpty() ? List.of() : List.of(path), reading);
    }

    String path() {
        return path;
    }

    /** The YAML under this key as written (a model pool's entry is merged over the top level's sections). */
    JsonNode raw() {
        return node;
    }

    /** Puts this key in the effective configuration as written (the top level's sections under pools:). */
    void effectiveAsWritten() {
        if (!isMissing()) {
            reading.effective(segments, node.deepCopy());
        }
    }

    /** Leaves this key out of the effective configuration (read from the top level, not this place's to set). */
    void forgetEffective() {
        reading.forget(segments);
    }

    /** The same key (path, schema, place in the effective tree) over another tree: a pool's merged sections. */
    ConfigNode over(JsonNode replacement) {
        return new ConfigNode(replacement, path, schemaPath, segments, reading);
    }

    ConfigReading reading() {
        return reading;
    }

    boolean isMissing() {
        return node.isMissingNode() || node.isNull();
    }

    ConfigKey key() {
        return reading.model().key(schemaPath);
    }

    /** A key of this mapping (already described elsewhere, or read again). */
    ConfigNode child(String key) {
        JsonNode c = node.isObject() ? node.get(key) : null;
        return new ConfigNode(c, ConfigModel.child(path, key), ConfigModel.child(schemaPath, key), append(key), reading);
    }

    /** A key of this mapping and what it means, for the schema and the reference. */
    ConfigNode child(String key, String description) {
        ConfigNode c = child(key);
        c.key().description(description);
        return c;
    }

    private List<Object> append(Object segment) {
        List<Object> s = new ArrayList<>(segments.size() + 1);
        s.addAll(segments);
        s.add(segment);
        return s;
    }

    /** What this key (a list's item, say) means, for the schema and the reference. */
    ConfigNode describe(String description) {
        key().description(description);
        return this;
    }

    /** The keys of this mapping in the order the reference lists them, beyond those {@link #allowOnly} names. */
    ConfigNode declare(String... keys) {
        key().type(Type.OBJECT).properties(Arrays.asList(keys));
        return this;
    }

    /** Rejects keys this version does not know: a typo must not silently fall back to a default. */
    ConfigNode allowOnly(String... keys) {
        List<String> allowed = Arrays.asList(keys);
        key().type(Type.OBJECT).properties(allowed);
        if (isMissing()) {
            return this;
        }
        if (!node.isObject()) {
            reject(describe(node), "a mapping");
            return this;
        }
        String expected = String.join(", ", allowed.stream().sorted().toList());
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!allowed.contains(k)) {
                String p = ConfigModel.child(path, k);
                reading.problem(p, p + ": unknown key (expected one of: " + expected + ")");
            }
        }
        return this;
    }

    private void requiredInParent() {
        int cut = schemaPath.lastIndexOf('.');
        if (cut > 0 && !schemaPath.endsWith("]")) {
            reading.model().key(schemaPath.substring(0, cut)).require(key().name());
        }
    }

    /** Marks this key as required (schema) and reports it when it is missing. */
    boolean require(ConfigNode parent, String expected) {
        parent.key().require(key().name());
        if (isMissing()) {
            reading.problem(path, path + ": missing (expected: " + expected + ")");
            return false;
        }
        return true;
    }

    /** The items of a list; a list read in an exploring run has one (absent) item, so its keys get recorded. */
    List<ConfigNode> items(int minItems, boolean unique) {
        key().type(Type.LIST).items(minItems, unique);
        if (reading.explore() && isMissing()) {
            return List.of(item(MissingNode.getInstance(), 0));
        }
        if (isMissing()) {
            return List.of();
        }
        if (!node.isArray()) {
            reject(describe(node), "a list");
            return List.of();
        }
        List<ConfigNode> out = new ArrayList<>();
        for (int i = 0; i < node.size(); i++) {
            out.add(item(node.get(i), i));
        }
        return out;
    }

    private ConfigNode item(JsonNode n, int i) {
        return new ConfigNode(n, path + "[" + i + "]", schemaPath + "[]", append(i), reading);
    }

    /** The entries of a mapping whose keys are names the user chooses (not a fixed set). */
    List<Map.Entry<String, ConfigNode>> entries(String entryDescription) {
        key().type(Type.MAP);
        reading.model().key(ConfigModel.child(schemaPath, "*")).description(entryDescription);
        if (reading.explore() && isMissing()) {
            return List.of(Map.entry("*", entry("*", MissingNode.getInstance())));
        }
        if (isMissing()) {
            reading.effective(segments, JsonNodeFactory.instance.objectNode());
            return List.of();
        }
        if (!node.isObject()) {
            reject(describe(node), "a mapping");
            return List.of();
        }
        List<Map.Entry<String, ConfigNode>> out = new ArrayList<>();
        node.fields().forEachRemaining(e -> out.add(Map.entry(e.getKey(), entry(e.getKey(), e.getValue()))));
        return out;
    }

    private ConfigNode entry(String name, JsonNode n) {
        return new ConfigNode(n, ConfigModel.child(path, name), ConfigModel.child(schemaPath, "*"), append(name), reading);
    }

    /** Records a list of strings as the default and, when this key is absent, as the value in force. */
    List<String> stringsDefault(List<String> def) {
        com.fasterxml.jackson.databind.node.ArrayNode a = JsonNodeFactory.instance.arrayNode();
        def.forEach(a::add);
        key().defaultValue(a);
        if (isMissing()) {
            reading.effective(segments, a);
        }
        return def;
    }

    /** The default shown by the reference when it follows from other keys (no {@code default} in the schema). */
    ConfigNode defaultIs(String text) {
        key().defaultText(text);
        return this;
    }

    /** A rule that involves other keys, for the reference (the reader checks it). */
    ConfigNode rule(String text) {
        key().rule(text);
        return this;
    }

    String text(String def) {
        key().type(Type.STRING).defaultValue(def == null ? null : TextNode.valueOf(def));
        String v = textOr(def, "a string");
        if (v != null) {
            reading.effective(segments, TextNode.valueOf(v));
        }
        return v;
    }

    Optional<String> optionalText() {
        return Optional.ofNullable(text(null));
    }

    /** The text of a required key; null (and a problem recorded) when it is missing or not a scalar. */
    String requiredText() {
        String v = scalar(Type.STRING, "a value");
        if (v != null) {
            inForce(v);
        }
        return v;
    }

    /**
     * The text of a required scalar of {@code type}, as written, for a reader that checks it further
     * (and calls {@link #inForce} with what it accepts); null, with a problem recorded, when it is
     * missing ({@code "path: missing (expected: missingExpected)"}) or not a scalar.
     */
    String scalar(Type type, String missingExpected) {
        key().type(type);
        requiredInParent();
        if (isMissing()) {
            reading.problem(path, path + ": missing (expected: " + missingExpected + ")");
            return null;
        }
        return textOr(null, "a string");
    }

    /** The text of an optional scalar of {@code type}, as written; null when absent or not a scalar. */
    String optionalScalar(Type type) {
        key().type(type);
        return textOr(null, "a string");
    }

    /** Records {@code value} as this key's value in force (the effective configuration). */
    void inForce(String value) {
        reading.effective(segments, TextNode.valueOf(value));
    }

    private String textOr(String def, String expected) {
        if (isMissing()) {
            return def;
        }
        if (!node.isValueNode()) {
            reject(describe(node), expected);
            return def;
        }
        return node.asText();
    }

    /** A value written as one of {@code values}' labels. */
    <E> E oneOf(E def, List<E> values, Function<E, String> label) {
        List<String> labels = values.stream().map(label).toList();
        key().type(Type.ENUM).enumValues(labels).defaultValue(TextNode.valueOf(label.apply(def)));
        String expected = "one of " + String.join(", ", labels);
        String v = textOr(label.apply(def), expected);
        E out = def;
        boolean found = false;
        for (E e : values) {
            if (label.apply(e).equals(v.toLowerCase(Locale.ROOT))) {
                out = e;
                found = true;
            }
        }
        if (!found) {
            reject(v, expected);
        }
        reading.effective(segments, TextNode.valueOf(label.apply(out)));
        return out;
    }

    /** An integer in [min, max]; absent or bad: {@code def}. */
    int intIn(int def, int min, int max) {
        return ConfigScalars.intIn(this, def, min, max);
    }

    /** An integer that may be absent (no default: absent means "the worker's own"). */
    Optional<Integer> optionalInt(int min, int max) {
        return ConfigScalars.optionalInt(this, min, max);
    }

    long longIn(long def, long min, long max) {
        return ConfigScalars.longIn(this, def, min, max);
    }

    boolean bool(boolean def) {
        return ConfigScalars.bool(this, def);
    }

    double doubleAtLeast(double def, double min) {
        return ConfigScalars.doubleAtLeast(this, def, min);
    }

    /** A number in [min, max] ({@code max} NaN: no upper bound); {@code expected} is the message's wording. */
    double doubleIn(double def, double min, double max, String expected) {
        return ConfigScalars.doubleIn(this, def, min, max, expected);
    }

    java.util.Optional<MemoryBudget> optionalMemoryBudget(long min) {
        return ConfigScalars.optionalMemoryBudget(this, min);
    }

    long bytesAtLeast(long def, long min) {
        return ConfigScalars.bytesAtLeast(this, def, min);
    }

    Duration durationAtLeast(Duration def, Duration min) {
        return ConfigScalars.durationAtLeast(this, def, min);
    }

    /** A duration no shorter than another key's value ({@code minKey}, read before as {@code min}). */
    Duration durationAtLeast(Duration def, Duration min, String minKey) {
        return ConfigScalars.durationAtLeast(this, def, min, minKey);
    }

    /** The parsed node, for {@link ConfigScalars}. */
    JsonNode json() {
        return node;
    }

    /** Records {@code value} as this key's value in force (the effective configuration). */
    void inForce(JsonNode value) {
        reading.effective(segments, value);
    }
    /** Records that this key's value is wrong: {@code "path: actual (expected: expected)"}. */
    void reject(String actual, String expected) {
        reading.problem(path, path + ": " + actual + " (expected: " + expected + ")");
    }

    static String describe(JsonNode n) {
        return n.isContainerNode() ? n.getNodeType().name().toLowerCase(Locale.ROOT) : n.asText();
    }

    static String num(double d) {
        return d == Math.rint(d) && !Double.isInfinite(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
