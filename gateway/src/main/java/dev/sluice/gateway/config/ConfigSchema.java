package dev.sluice.gateway.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.UncheckedIOException;

/**
 * The JSON Schema (draft 2020-12) of the configuration file, generated from the {@link ConfigModel}
 * the readers record: {@code config/gateway.schema.json}, which editors use through the
 * {@code # yaml-language-server: $schema=gateway.schema.json} line of {@code config/gateway.yaml}.
 * Every mapping is closed ({@code additionalProperties: false}), as the loader is. Rules that
 * involve two keys ({@code max_request_tokens <= max_pending_tokens}, a mode's worker lists) are
 * the loader's alone; the schema names them in descriptions.
 */
public final class ConfigSchema {
    static final String URL_REGEX = "^http://[^/?#\\s]+/*$";
    static final String ENV_NAME_REGEX = "^[A-Za-z_][A-Za-z0-9_]*$";
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private ConfigSchema() {
    }

    public static ObjectNode generate(ConfigModel model) {
        ObjectNode root = F.objectNode();
        root.put("$schema", "https://json-schema.org/draft/2020-12/schema");
        root.put("title", "Sluice gateway configuration");
        root.put("$comment", "Generated from the configuration readers (dev.sluice.gateway.config); do not edit. "
                + "Regenerate: java -jar gateway/target/sluice-gateway.jar schema > config/gateway.schema.json");
        root.setAll(schema(model, model.root()));
        return root;
    }

    /** {@link #generate} as the file holds it: two-space indents, a final newline. */
    public static String json(ConfigModel model) {
        DefaultPrettyPrinter pp = new DefaultPrettyPrinter(Separators.createDefaultInstance()
                .withObjectFieldValueSpacing(Separators.Spacing.AFTER))
                .withObjectIndenter(new DefaultIndenter("  ", "\n"))
                .withArrayIndenter(new DefaultIndenter("  ", "\n"));
        try {
            return new ObjectMapper().writer(pp).writeValueAsString(generate(model)) + "\n";
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ObjectNode schema(ConfigModel model, ConfigKey k) {
        ObjectNode o = F.objectNode();
        String d = k.description() + (k.rule().isEmpty() ? "" : " Must be " + k.rule() + ".")
                + (k.defaultValue() == null && !k.defaultText().isEmpty() ? " Default: " + k.defaultText() + "." : "");
        if (!d.isBlank()) {
            o.put("description", d.trim());
        }
        switch (k.type()) {
            case OBJECT -> {
                o.put("type", "object");
                ObjectNode props = o.putObject("properties");
                for (ConfigKey c : model.children(k)) {
                    props.set(c.name(), schema(model, c));
                }
                o.put("additionalProperties", false);
                if (!k.required().isEmpty()) {
                    ArrayNode req = o.putArray("required");
                    k.properties().stream().filter(k.required()::contains).forEach(req::add);
                }
            }
            case MAP -> {
                o.put("type", "object");
                model.children(k).forEach(c -> o.set("additionalProperties", schema(model, c)));
            }
            case LIST -> {
                o.put("type", "array");
                model.children(k).forEach(c -> o.set("items", schema(model, c)));
                if (k.minItems() > 0) {
                    o.put("minItems", k.minItems());
                }
                if (k.uniqueItems()) {
                    o.put("uniqueItems", true);
                }
            }
            case STRING -> o.put("type", "string");
            case ENUM -> {
                o.put("type", "string");
                k.enumValues().forEach(o.putArray("enum")::add);
            }
            case INTEGER, NUMBER -> {
                o.put("type", k.type() == ConfigKey.Type.INTEGER ? "integer" : "number");
                bounds(o, k);
            }
            case BOOLEAN -> o.put("type", "boolean");
            case DURATION -> o.put("type", "string").put("pattern", Durations.REGEX);
            case BYTE_SIZE -> {
                o.putArray("type").add("integer").add("string");
                o.put("pattern", ByteSizes.REGEX);
                bounds(o, k);
            }
            case MEMORY_BUDGET -> {
                o.putArray("type").add("integer").add("string");
                o.put("pattern", MemoryBudget.REGEX);
            }
            case URL -> o.put("type", "string").put("pattern", URL_REGEX);
            case ENV_NAME -> o.put("type", "string").put("pattern", ENV_NAME_REGEX);
            default -> throw new IllegalStateException(k.path() + ": " + k.type());
        }
        if (k.defaultValue() != null) {
            o.set("default", k.defaultValue());
        }
        return o;
    }

    private static void bounds(ObjectNode o, ConfigKey k) {
        put(o, "minimum", k.minimum());
        put(o, "maximum", k.maximum());
    }

    private static void put(ObjectNode o, String name, Number n) {
        if (n == null) {
            return;
        }
        if (n instanceof Double d && d != Math.rint(d)) {
            o.put(name, d);
        } else {
            o.put(name, n.longValue());
        }
    }
}
