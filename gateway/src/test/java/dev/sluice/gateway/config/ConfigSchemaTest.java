package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.networknt.schema.Error;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code config/gateway.schema.json} and {@code docs/configuration.md} are generated from the
 * readers' {@link ConfigModel}; this keeps the committed files in sync, and checks every shipped
 * YAML against the schema with an independent validator (networknt, draft 2020-12).
 *
 * <p>Regenerate both: {@code mvn -o -q test -pl gateway -Dtest=ConfigSchemaTest -Dsluice.regenerate=true}.
 */
class ConfigSchemaTest {
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    static final Path SCHEMA = ROOT.resolve("config/gateway.schema.json");
    static final Path DOCS = ROOT.resolve("docs/configuration.md");
    private static final String REGENERATE = "regenerate: mvn -o -q test -pl gateway -Dtest=ConfigSchemaTest "
            + "-Dsluice.regenerate=true (or java -jar gateway/target/sluice-gateway.jar schema > config/gateway.schema.json)";
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final ObjectMapper JSON = new ObjectMapper();

    private static ConfigModel model;

    @BeforeAll
    static void generate() throws IOException {
        model = ConfigLoader.model();
        if (Boolean.getBoolean("sluice.regenerate")) {
            Files.writeString(SCHEMA, ConfigSchema.json(model));
            Files.writeString(DOCS, ConfigReference.update(Files.readString(DOCS), model));
        }
    }

    @Test
    void theCommittedSchemaIsTheGeneratedOne() throws IOException {
        assertThat(Files.readString(SCHEMA)).as("config/gateway.schema.json is out of date; " + REGENERATE)
                .isEqualTo(ConfigSchema.json(model));
    }

    @Test
    void theReferenceInTheDocsIsTheGeneratedOne() throws IOException {
        String docs = Files.readString(DOCS);
        assertThat(docs).as("docs/configuration.md's generated blocks are out of date; " + REGENERATE)
                .isEqualTo(ConfigReference.update(docs, model));
        for (ConfigKey k : model.walk()) {
            // a pool's sections are the top level's keys (pools[].admission.max_queued_requests is admission's)
            String documented = ConfigReference.shownAsTopLevel(model, k.path())
                    ? k.path().substring("pools[].".length()) : k.path();
            assertThat(docs).as("docs/configuration.md documents " + k.path()).contains("`" + documented + "`");
        }
    }

    @Test
    void everyKeyHasATypeAndADescription() {
        assertThat(model.walk()).hasSizeGreaterThan(100);
        for (ConfigKey k : model.walk()) {
            assertThat(k.type()).as(k.path() + " type").isNotNull();
            assertThat(k.description()).as(k.path() + " description").isNotBlank();
        }
        assertThat(model.find("workers.prefill[].bootstrap_port")).isPresent();
        assertThat(model.find("workers.unified[].url")).isPresent();
        assertThat(model.find("workers.api_key_env")).isPresent();
        assertThat(model.find("admission.api_keys.*.tenant")).isPresent();
        assertThat(model.find("admission.priorities[]")).isPresent();
        assertThat(model.find("routing.decode.cache_aware.balance_abs_threshold").orElseThrow().defaultText())
                .isEqualTo("32");
        assertThat(model.find("telemetry.stale_after").orElseThrow().defaultText()).isEqualTo("5 x telemetry.interval");
    }

    @Test
    void theSchemaIsValidDraft202012() throws IOException {
        SchemaRegistry registry = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
        Schema meta = registry.getSchema(SchemaLocation.of("https://json-schema.org/draft/2020-12/schema"));
        assertThat(meta.validate(Files.readString(SCHEMA), InputFormat.JSON)).isEmpty();
    }

    @Test
    void everyShippedYamlValidatesAgainstTheSchema() throws IOException {
        Schema schema = schema();
        List<Path> files = shippedYaml();
        assertThat(files).hasSizeGreaterThan(5).contains(ROOT.resolve("config/gateway.yaml"));
        for (Path f : files) {
            List<Error> errors = schema.validate(YAML.readTree(f.toFile()));
            assertThat(errors).as(ROOT.relativize(f) + " against config/gateway.schema.json").isEmpty();
        }
    }

    @Test
    void theSchemaRejectsWhatTheLoaderRejects() throws IOException {
        Schema schema = schema();
        Map<String, String> bad = Map.of(
                "listen: { prot: 8080 }\nworkers: { decode: [ { url: http://h:1 } ] }", "prot",
                "timeouts: { connect: soon }\nworkers: { decode: [ { url: http://h:1 } ] }", "connect",
                "listen: { port: 70000 }\nworkers: { decode: [ { url: http://h:1 } ] }", "port",
                "workers: { decode: [ { url: ftp://h } ] }", "url",
                "disaggregation: mooncake\nworkers: { decode: [ { url: http://h:1 } ] }", "disaggregation",
                "admin: { port: 8081 }", "workers",
                "workers: { decode: [] }", "decode",
                "http: { max_request_body: 12 parsecs }\nworkers: { decode: [ { url: http://h:1 } ] }", "max_request_body");
        for (Map.Entry<String, String> e : bad.entrySet()) {
            List<Error> errors = schema.validate(YAML.readTree(e.getKey()));
            assertThat(errors).as(e.getKey()).isNotEmpty();
            assertThat(errors.toString()).as(e.getKey()).contains(e.getValue());
        }
    }

    @Test
    void theEffectiveConfigValidatesAndReadsBackTheSame() throws IOException {
        Schema schema = schema();
        for (Path f : shippedYaml()) {
            LoadedConfig loaded = ConfigLoader.check(f, ConfigOverrides.none());
            assertThat(schema.validate(loaded.effective())).as("effective " + f.getFileName()).isEmpty();
            assertThat(ConfigLoader.parse(loaded.effectiveYaml(), "effective")).as(f.getFileName().toString())
                    .isEqualTo(loaded.config());
        }
    }

    @Test
    void gatewayYamlPointsEditorsAtTheSchemaAndMentionsEveryKey() throws IOException {
        String yaml = Files.readString(ROOT.resolve("config/gateway.yaml"));
        assertThat(yaml).contains("# yaml-language-server: $schema=gateway.schema.json\n");
        List<String> missing = new ArrayList<>();
        for (ConfigKey k : model.walk()) {
            String name = k.name();
            if (name.equals("[]") || name.equals("*") || k.path().startsWith("admission.api_keys.")) {
                continue; // list items and the example API key are described in comments
            }
            // a key, or a key in a commented-out example line ("# unified:", "# path: ...")
            if (!yaml.matches("(?s).*(^|\\n)[ #]*(- )?" + java.util.regex.Pattern.quote(name) + ":.*")
                    && !yaml.contains("{ " + name + ":") && !yaml.contains(", " + name + ":")) {
                missing.add(k.path());
            }
        }
        assertThat(missing).as("keys config/gateway.yaml does not show").isEmpty();
    }

    static Schema schema() throws IOException {
        return SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12)
                .getSchema(JSON.readTree(SCHEMA.toFile()));
    }

    static List<Path> shippedYaml() throws IOException {
        try (Stream<Path> s = Files.list(ROOT.resolve("config"))) {
            return s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
    }
}
