package dev.sluice.gateway.config;

import java.util.List;
import java.util.stream.Collectors;

/**
 * The key reference of {@code docs/configuration.md}, generated from the same {@link ConfigModel}
 * as the JSON Schema: every key with its type, allowed values, default and meaning; and the table
 * of environment overrides ({@link ConfigOverrides#ENV}). Each sits between two marker comments in
 * the document, which {@link #update} rewrites and a test keeps in sync.
 */
public final class ConfigReference {
    public static final String REFERENCE = "reference";
    public static final String ENVIRONMENT = "environment";

    private ConfigReference() {
    }

    public static String begin(String block) {
        return "<!-- BEGIN GENERATED " + block + ": sluice-gateway schema --format markdown; do not edit -->";
    }

    public static String end(String block) {
        return "<!-- END GENERATED " + block + " -->";
    }

    /** One section per top-level key, a table row per key under it. */
    public static String reference(ConfigModel model) {
        StringBuilder out = new StringBuilder();
        for (ConfigKey section : model.children(model.root())) {
            out.append("### `").append(section.path()).append("`\n\n");
            if (section.type() == ConfigKey.Type.OBJECT) {
                out.append(md(section.description())).append("\n\n");
            }
            out.append("| Key | Type | Default | Description |\n|---|---|---|---|\n");
            List<ConfigKey> rows = section.type() == ConfigKey.Type.OBJECT ? below(model, section) : List.of(section);
            for (ConfigKey k : rows) {
                out.append("| `").append(k.path()).append("` | ").append(type(k)).append(" | ")
                        .append(defaultColumn(model, k))
                        .append(" | ").append(md(k.description())).append(" |\n");
            }
            out.append('\n');
        }
        return out.toString().stripTrailing() + "\n";
    }

    private static String defaultColumn(ConfigModel model, ConfigKey k) {
        if (!k.defaultText().isEmpty()) {
            return k.defaultValue() == null ? md(k.defaultText()) : "`" + k.defaultText() + "`";
        }
        int cut = Math.max(k.path().lastIndexOf('.'), k.path().lastIndexOf('['));
        String parent = cut < 0 ? "" : k.path().substring(0, cut);
        boolean required = model.find(parent).map(p -> p.required().contains(k.name())).orElse(false);
        return required ? "required" : "";
    }

    private static List<ConfigKey> below(ConfigModel model, ConfigKey section) {
        return model.walk().stream().filter(k -> k.path().startsWith(section.path() + ".")
                || k.path().startsWith(section.path() + "[")).toList();
    }

    /** The type column: kind, then allowed values and rules. */
    static String type(ConfigKey k) {
        String t = switch (k.type()) {
            case ENUM -> "one of " + k.enumValues().stream().map(v -> "`" + v + "`").collect(Collectors.joining(", "));
            case LIST -> "list" + (k.minItems() > 0 ? ", at least " + k.minItems() : "")
                    + (k.uniqueItems() ? ", distinct" : "");
            default -> k.type().label();
        };
        if (!k.bounds().isEmpty()) {
            t += ", " + k.bounds();
        }
        if (!k.rule().isEmpty()) {
            t += "; " + k.rule();
        }
        return md(t);
    }

    /** The environment overrides as a table. */
    public static String environment() {
        StringBuilder out = new StringBuilder("| Variable | Sets | Example |\n|---|---|---|\n");
        for (ConfigOverrides.EnvOverride o : ConfigOverrides.ENV) {
            out.append("| `").append(o.variable()).append("` | `").append(o.path()).append("` | `")
                    .append(o.example()).append("` |\n");
        }
        return out.toString();
    }

    /** {@code markdown} with both generated blocks rewritten; a block whose markers are missing is an error. */
    public static String update(String markdown, ConfigModel model) {
        return replace(replace(markdown, ENVIRONMENT, environment()), REFERENCE, reference(model));
    }

    private static String replace(String markdown, String block, String content) {
        int b = markdown.indexOf(begin(block));
        int e = markdown.indexOf(end(block));
        if (b < 0 || e < b) {
            throw new IllegalArgumentException("no generated block '" + block + "' (expected the lines " + begin(block)
                    + " and " + end(block) + ")");
        }
        return markdown.substring(0, b) + begin(block) + "\n" + content + end(block) + markdown.substring(e + end(block).length());
    }

    private static String md(String text) {
        // a pipe ends a table cell; "<key>" would be taken for an HTML tag
        return text.replace("|", "\\|").replaceAll("<(?=[A-Za-z/!])", "&lt;");
    }
}
