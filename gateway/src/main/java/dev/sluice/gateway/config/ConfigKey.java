package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What the readers know of one key of the configuration: its type, bounds, default and meaning,
 * recorded by {@link ConfigNode}'s getters as they read. The one source that the JSON Schema
 * ({@link ConfigSchema}) and the reference in {@code docs/configuration.md} ({@link ConfigReference})
 * are generated from, so that neither is written by hand.
 *
 * <p>Paths: {@code listen.port}; a list's items {@code workers.prefill[]}; a mapping's entries,
 * whatever their name, {@code admission.api_keys.*}; the root is {@code ""}.
 */
public final class ConfigKey {
    /** The kinds of value the readers know. */
    public enum Type {
        OBJECT("mapping"), MAP("mapping of name to value"), LIST("list"), STRING("string"), ENUM("string"),
        INTEGER("integer"), NUMBER("number"), BOOLEAN("boolean"), DURATION("duration"), BYTE_SIZE("byte size"),
        MEMORY_BUDGET("byte size or heap percentage"),
        URL("URL"), ENV_NAME("environment variable name");

        private final String label;

        Type(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    private final String path;
    private Type type;
    private String description = "";
    private JsonNode defaultValue;
    private String defaultText;
    private Number minimum;
    private Number maximum;
    private String bounds = "";
    private String rule = "";
    private final List<String> enumValues = new ArrayList<>();
    private final Set<String> properties = new LinkedHashSet<>();
    private final Set<String> required = new LinkedHashSet<>();
    private int minItems;
    private boolean uniqueItems;

    ConfigKey(String path) {
        this.path = path;
    }

    public String path() {
        return path;
    }

    /** The last part of the path ({@code port}, {@code []}, {@code *}). */
    public String name() {
        int i = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
        return i < 0 ? path : path.charAt(i) == '[' ? "[]" : path.substring(i + 1);
    }

    public Type type() {
        return type;
    }

    public String description() {
        return description;
    }

    /** The default as a JSON value, or null when there is none or it is derived from other keys. */
    public JsonNode defaultValue() {
        return defaultText == null ? defaultValue : null;
    }

    /** The default as the reference shows it: derived ({@code "5 x telemetry.interval"}), written, or empty. */
    public String defaultText() {
        if (defaultText != null) {
            return defaultText;
        }
        return defaultValue == null ? "" : defaultValue.isTextual() ? defaultValue.asText() : defaultValue.toString();
    }

    public Number minimum() {
        return minimum;
    }

    public Number maximum() {
        return maximum;
    }

    /** The allowed values in words ({@code "0 to 65535"}, {@code ">= 1ms"}); empty when any value of the type goes. */
    public String bounds() {
        return bounds;
    }

    /** A rule that involves other keys ({@code "<= admission.max_pending_tokens"}); empty when none. */
    public String rule() {
        return rule;
    }

    public List<String> enumValues() {
        return List.copyOf(enumValues);
    }

    /** An {@link Type#OBJECT}'s keys, in the order the reference lists them. */
    public List<String> properties() {
        return List.copyOf(properties);
    }

    public Set<String> required() {
        return Set.copyOf(required);
    }

    public int minItems() {
        return minItems;
    }

    public boolean uniqueItems() {
        return uniqueItems;
    }

    ConfigKey type(Type t) {
        if (type == null) { // a key is read the same way in every run; the first record stands
            type = t;
        }
        return this;
    }

    ConfigKey description(String d) {
        if (d != null && !d.isEmpty()) {
            description = d;
        }
        return this;
    }

    ConfigKey defaultValue(JsonNode v) {
        if (defaultValue == null) {
            defaultValue = v;
        }
        return this;
    }

    ConfigKey defaultText(String t) {
        defaultText = t;
        return this;
    }

    ConfigKey range(Number min, Number max, String words) {
        minimum = min;
        maximum = max;
        bounds = words;
        return this;
    }

    ConfigKey rule(String r) {
        rule = r;
        return this;
    }

    ConfigKey enumValues(List<String> values) {
        enumValues.clear();
        enumValues.addAll(values);
        return this;
    }

    ConfigKey properties(List<String> keys) {
        properties.addAll(keys);
        return this;
    }

    ConfigKey require(String key) {
        required.add(key);
        return this;
    }

    ConfigKey items(int min, boolean unique) {
        minItems = min;
        uniqueItems = unique;
        return this;
    }
}
