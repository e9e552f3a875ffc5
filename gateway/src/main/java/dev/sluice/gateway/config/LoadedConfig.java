package dev.sluice.gateway.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import java.io.UncheckedIOException;
import java.util.Objects;

/**
 * A configuration that validated, with its effective values: every key the readers read, defaults
 * filled in, overrides applied, in the file's own terms ({@code 2s}, {@code 32MiB}). Secrets are
 * not in it: {@code workers.api_key_env} names a variable, whose value is never printed.
 */
public record LoadedConfig(GatewayConfig config, ObjectNode effective) {
    private static final ObjectMapper YAML = new ObjectMapper(YAMLFactory.builder()
            .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
            .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
            .enable(YAMLGenerator.Feature.INDENT_ARRAYS_WITH_INDICATOR)
            .build());

    public LoadedConfig {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(effective, "effective");
    }

    /** The effective configuration as YAML, valid against {@code config/gateway.schema.json}. */
    public String effectiveYaml() {
        try {
            return YAML.writeValueAsString(effective);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }
}
