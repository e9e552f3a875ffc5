package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@link ConfigSection} is the one declaration of how a reload treats each section: it must cover
 * every part of {@link GatewayConfig} and every top-level key of the file, each section's accessor
 * and setter must be its own, and {@code docs/operations.md} must say what it declares.
 */
class ConfigSectionTest {
    private static final GatewayConfig RUNNING = ConfigLoader.parse("""
            workers:
              prefill: [ { url: "http://10.0.0.1:30000" } ]
              decode: [ { url: "http://10.0.0.2:30001" } ]
            tracing: { otlp: { endpoint: "http://10.0.0.9:4317" } }
            """, "running.yaml"); // tracing present: two absent optional sections would be the one same empty value
    /** Every section different from {@link #RUNNING}, and valid with either's mode. */
    private static final GatewayConfig OTHER = EverySectionChanged.parse("{ decode: { policy: round_robin } }", "other.yaml");

    private static List<ConfigSection> topLevel() {
        return Arrays.stream(ConfigSection.values()).filter(s -> !s.key().contains(".")).toList();
    }

    @Test
    void everyComponentOfTheConfigurationIsExactlyOneSection() throws ReflectiveOperationException {
        List<String> uncovered = new ArrayList<>();
        for (RecordComponent c : GatewayConfig.class.getRecordComponents()) {
            Object value = c.getAccessor().invoke(RUNNING);
            long sections = topLevel().stream().filter(s -> s.valueIn(RUNNING) == value).count();
            if (sections != 1) {
                uncovered.add(c.getName() + " (" + sections + " sections)");
            }
        }
        assertThat(uncovered).isEmpty();
        assertThat(topLevel()).hasSize(GatewayConfig.class.getRecordComponents().length);
    }

    @Test
    void theTopLevelSectionsAreTheFilesTopLevelKeys() {
        Set<String> keys = new LinkedHashSet<>(ConfigLoader.model().root().properties());
        // checked when the file is read, not held in GatewayConfig: nothing for a reload to apply
        keys.remove("vllm_kv_connector");
        keys.remove("default_pool"); // held in the pools section (PoolsConfig.defaultPool)
        assertThat(topLevel().stream().map(ConfigSection::key)).containsExactlyInAnyOrderElementsOf(keys);
    }

    @Test
    void aPartOfASectionIsDeclaredAfterItsParent() {
        for (ConfigSection s : ConfigSection.values()) {
            int dot = s.key().lastIndexOf('.');
            if (dot > 0) {
                String parent = s.key().substring(0, dot);
                ConfigSection p = Arrays.stream(ConfigSection.values()).filter(x -> x.key().equals(parent)).findFirst()
                        .orElseThrow();
                assertThat(p.ordinal()).as(s.key()).isLessThan(s.ordinal());
            }
        }
    }

    @Test
    void eachSectionTakesOnlyItsOwnValue() {
        for (ConfigSection s : ConfigSection.values()) {
            assertThat(s.valueIn(OTHER)).as(s.key()).isNotEqualTo(s.valueIn(RUNNING));
            GatewayConfig.Builder b = OTHER.toBuilder();
            s.takeFrom(b, RUNNING);
            GatewayConfig taken = b.build();
            assertThat(s.valueIn(taken)).as(s.key()).isEqualTo(s.valueIn(RUNNING));
            for (ConfigSection t : ConfigSection.values()) {
                boolean related = t.key().startsWith(s.key() + ".") || s.key().startsWith(t.key() + ".");
                if (t != s && !related) {
                    assertThat(t.valueIn(taken)).as(s.key() + " left " + t.key()).isEqualTo(t.valueIn(OTHER));
                }
            }
        }
        // a part is taken into its parent's value, not with it
        GatewayConfig.Builder b = OTHER.toBuilder();
        ConfigSection.ADMISSION_TOKENIZER.takeFrom(b, RUNNING);
        assertThat(b.build().admission().maxQueuedRequests()).isEqualTo(7);
    }

    /**
     * docs/operations.md, "Live reload": the first key of each row of the "What applies live" table
     * names a live section (or a key inside one), and "What needs a restart" lists the restart ones.
     */
    @Test
    void theOperationsRunbookSaysWhatIsDeclared() throws IOException {
        String doc = Files.readString(ConfigSchemaTest.ROOT.resolve("docs/operations.md"));
        String live = between(doc, "**What applies live**", "**What needs a restart**");
        String restart = between(doc, "**What needs a restart**", "**Seeing it.**");

        // a row's first cell: `timeouts`, `retries` (two sections), or `admission` ..., `api_keys` (keys in it)
        Set<String> liveInDoc = new LinkedHashSet<>();
        ConfigModel model = ConfigLoader.model();
        Matcher row = Pattern.compile("(?m)^\\| (`[a-z_.]+`[^|]*)\\|([^\\n]*)$").matcher(live);
        while (row.find()) {
            String withinMode = "(same `disaggregation`)";
            Matcher key = Pattern.compile("`([a-z_.]+)`").matcher(row.group(1).replace(withinMode, ""));
            String first = null;
            while (key.find()) {
                String k = key.group(1);
                if (first != null && section(k).isEmpty()) {
                    assertThat(model.find(first + "." + k)).as(k + " in the row of " + first).isPresent();
                    continue;
                }
                first = first == null ? k : first;
                ConfigSection s = section(k).orElseThrow(() -> new AssertionError("no section for " + k));
                liveInDoc.add(s.key());
                assertThat(row.group(1).contains(withinMode)).as("row of " + k)
                        .isEqualTo(s.effect() == ConfigSection.Effect.LIVE_WITHIN_MODE);
            }
        }
        assertThat(liveInDoc).containsExactlyInAnyOrderElementsOf(Arrays.stream(ConfigSection.values())
                .filter(s -> s.effect() != ConfigSection.Effect.RESTART).map(ConfigSection::key).toList());

        // the list follows the parenthesis "(reported as `restart_required` ... still applied):"
        String list = restart.substring(restart.indexOf("):") + 2);
        List<String> restartInDoc = new ArrayList<>();
        Matcher key = Pattern.compile("`([a-z_.]+)`").matcher(list);
        while (key.find()) {
            restartInDoc.add(key.group(1));
        }
        assertThat(restartInDoc).containsExactlyElementsOf(Arrays.stream(ConfigSection.values())
                .filter(s -> s.effect() == ConfigSection.Effect.RESTART).map(ConfigSection::key).toList());
    }

    /** The section a documented key belongs to: itself, else the nearest enclosing one; empty: none. */
    private static Optional<ConfigSection> section(String key) {
        for (String k = key; ; k = k.substring(0, k.lastIndexOf('.'))) {
            String candidate = k;
            Optional<ConfigSection> s = Arrays.stream(ConfigSection.values())
                    .filter(x -> x.key().equals(candidate)).findFirst();
            if (s.isPresent() || !k.contains(".")) {
                return s;
            }
        }
    }

    private static String between(String text, String from, String to) {
        int a = text.indexOf(from);
        int b = text.indexOf(to, a);
        assertThat(a).as(from).isNotNegative();
        assertThat(b).as(to).isGreaterThan(a);
        return text.substring(a, b);
    }
}
