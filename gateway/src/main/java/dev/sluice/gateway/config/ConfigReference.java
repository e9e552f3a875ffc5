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
            List<ConfigKey> rows = section.type() == ConfigKey.Type.OBJECT ? below(model, section)
                    : section.path().equals(POOLS) ? poolRows(model, section) : List.of(section);
            for (ConfigKey k : rows) {
                String sameAs = sameAsTopLevel(model, k);
                out.append("| `").append(k.path()).append("` | ").append(sameAs != null ? "mapping" : type(k))
                        .append(" | ").append(sameAs != null ? "" : defaultColumn(model, k))
                        .append(" | ").append(md(sameAs != null ? sameAs : k.description())).append(" |\n");
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

    static final String POOLS = "pools";

    /** {@code pools}: the list, its item and the item's own keys; a pool's sections are the top level's keys. */
    private static List<ConfigKey> poolRows(ConfigModel model, ConfigKey section) {
        List<ConfigKey> out = new java.util.ArrayList<>(List.of(section));
        for (ConfigKey k : below(model, section)) {
            String rest = k.path().substring((POOLS + "[]").length());
            if (rest.isEmpty() || !rest.substring(1).contains(".") || rest.startsWith(".models")) {
                out.add(k);
            }
        }
        return out;
    }

    /**
     * For a pool's section ({@code pools[].admission}): what it is, in place of its rows (the top level's, whose
     * reference is above); null for any other key.
     */
    static String sameAsTopLevel(ConfigModel model, ConfigKey k) {
        String prefix = POOLS + "[].";
        if (!k.path().startsWith(prefix) || k.path().indexOf('.', prefix.length()) >= 0
                || k.type() != ConfigKey.Type.OBJECT) {
            return null;
        }
        String name = k.path().substring(prefix.length());
        boolean merged = List.of("routing", "health", "admission").contains(name);
        return "The pool's " + name + ": the keys of the top-level `" + name + "` (reference above)"
                + (merged ? ", laid key by key over the top level's own, which is every pool's default" : "; "
                + "required in every pool")
                + (name.equals("admission") ? ". The gateway's own admission keys (api_keys, require_api_key, "
                + "priorities, default_priority, tenant_limits, per_class, drain_grace) are refused here" : "") + ".";
    }

    /** Whether {@code path} is a key the reference shows through its top-level twin ({@link #sameAsTopLevel}). */
    public static boolean shownAsTopLevel(ConfigModel model, String path) {
        String prefix = POOLS + "[].";
        int dot = path.indexOf('.', prefix.length());
        return path.startsWith(prefix) && dot > 0 && !path.startsWith(prefix + "models")
                && model.find(path.substring(prefix.length())).isPresent();
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
