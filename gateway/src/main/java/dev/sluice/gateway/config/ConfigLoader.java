package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Reads the YAML file, lays the overrides over it, applies defaults, validates, and returns an
 * immutable {@link GatewayConfig}; or throws one {@link ConfigException} with every problem found
 * (in file order), not just the first.
 */
public final class ConfigLoader {
    private ConfigLoader() {
    }

    /** The file alone (secrets it names are read from the process environment). */
    public static GatewayConfig load(Path file) {
        return load(file, ConfigOverrides.none());
    }

    public static GatewayConfig load(Path file, ConfigOverrides overrides) {
        return check(file, overrides).config();
    }

    /** {@code yaml} alone; {@code source} names it in messages. */
    public static GatewayConfig parse(String yaml, String source) {
        return parse(yaml, source, ConfigOverrides.none());
    }

    public static GatewayConfig parse(String yaml, String source, ConfigOverrides overrides) {
        return check(yaml, source, overrides).config();
    }

    /** The configuration and its effective values (what {@code check-config} prints). */
    public static LoadedConfig check(Path file, ConfigOverrides overrides) {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException(file + ": no such file");
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read (" + e.getMessage() + ")", e);
        }
        return check(text, file.toString(), overrides);
    }

    public static LoadedConfig check(String yaml, String source, ConfigOverrides overrides) {
        Objects.requireNonNull(overrides, "overrides");
        YamlDocument doc = YamlDocument.parse(yaml, source);
        boolean empty = doc.tree == null || doc.tree.isMissingNode() || doc.tree.isNull();
        if (!empty && !doc.tree.isObject()) {
            throw new ConfigException(source + ": " + doc.tree.getNodeType().name().toLowerCase(java.util.Locale.ROOT)
                    + " (expected: a mapping of sections such as listen:, workers:)");
        }
        ConfigOverrides.Applied applied = overrides.apply(empty ? null : doc.tree);
        if (empty && applied.origins().isEmpty()) {
            throw new ConfigException(source + ": empty configuration (expected: at least workers.prefill and "
                    + "workers.decode)");
        }
        ConfigReading reading = ConfigReading.of(source, doc.lines, applied.origins(), overrides::env);
        doc.duplicates.forEach(d -> reading.problem(d.path(), d.text(), d.line()));
        applied.problems().forEach(reading::problem);
        GatewayConfig config;
        try {
            config = GatewayConfigReader.read(ConfigNode.root(applied.tree(), "", reading));
        } catch (IllegalArgumentException e) {
            // a record's own check; the readers should have caught it first, with the key's name
            if (reading.hasProblems()) {
                throw new ConfigException(reading.problems());
            }
            throw new ConfigException(source + ": " + e.getMessage(), e);
        }
        if (reading.hasProblems()) {
            throw new ConfigException(reading.problems());
        }
        return new LoadedConfig(config, reading.effectiveTree());
    }

    /**
     * Every key the readers know, with type, bounds, default and description: the readers run over an
     * empty document once per disaggregation mode, visiting one item of every list and mapping.
     */
    public static ConfigModel model() {
        ConfigModel model = new ConfigModel();
        model.root().description("Sluice gateway configuration. Unknown keys are an error.");
        for (DisaggregationMode mode : DisaggregationMode.values()) {
            JsonNode doc = JsonNodeFactory.instance.objectNode().put("disaggregation", mode.label());
            try {
                GatewayConfigReader.read(ConfigNode.root(doc, "", ConfigReading.explore(model)));
            } catch (RuntimeException e) {
                throw new IllegalStateException("a reader failed on the empty document in mode " + mode.label(), e);
            }
        }
        return model;
    }
}
