package dev.sluice.gateway.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What differs from host to host, laid over the file before it is validated (so that a bad value
 * is reported under its key, with where it came from): environment variables ({@link #ENV}) and
 * {@code --set key.path=value} options; {@code --set} over the environment over the file. Also the
 * environment that secrets named by the file ({@code workers.api_key_env}) are read from.
 *
 * <p>{@code --set} takes a YAML value: {@code --set listen.port=9000},
 * {@code --set 'workers.decode=[{url: http://10.0.0.2:30001}]'}, {@code --set admission.drain_grace=1m};
 * {@code null} (or nothing after {@code =}) removes the key, so its default applies. A list item is
 * {@code workers.prefill[0].url}.
 */
public final class ConfigOverrides {
    /** How an environment variable's value becomes a YAML value. */
    public enum EnvKind {
        /** Taken as a string as it is (a host name, an IPv6 address). */
        TEXT,
        /** A port number. */
        PORT,
        /** Comma-separated worker URLs, each optionally followed by {@code #bootstrap_port=PORT}. */
        WORKERS
    }

    /** An environment variable that overrides a key. */
    public record EnvOverride(String variable, String path, EnvKind kind, String example) {
    }

    /** The environment variables read, in the order the reference lists them. */
    public static final List<EnvOverride> ENV = List.of(
            new EnvOverride("SLUICE_LISTEN_HOST", "listen.host", EnvKind.TEXT, "0.0.0.0"),
            new EnvOverride("SLUICE_LISTEN_PORT", "listen.port", EnvKind.PORT, "8080"),
            new EnvOverride("SLUICE_ADMIN_HOST", "admin.host", EnvKind.TEXT, "127.0.0.1"),
            new EnvOverride("SLUICE_ADMIN_PORT", "admin.port", EnvKind.PORT, "8081"),
            new EnvOverride("SLUICE_WORKERS_PREFILL", "workers.prefill", EnvKind.WORKERS,
                    "http://10.0.0.1:30000#bootstrap_port=8998,http://10.0.0.2:30000#bootstrap_port=8998"),
            new EnvOverride("SLUICE_WORKERS_DECODE", "workers.decode", EnvKind.WORKERS,
                    "http://10.0.0.3:30001,http://10.0.0.4:30001"),
            new EnvOverride("SLUICE_WORKERS_UNIFIED", "workers.unified", EnvKind.WORKERS,
                    "http://10.0.0.1:30000,http://10.0.0.2:30000"));

    private static final Pattern PATH = Pattern.compile("[^.\\[\\]=\\s]+(\\[\\d+])*(\\.[^.\\[\\]=\\s]+(\\[\\d+])*)*");
    private static final Pattern SEGMENT = Pattern.compile("([^.\\[\\]]+)|\\[(\\d+)]");

    private final Map<String, String> env;
    private final boolean fromEnv;
    private final List<String> sets;

    private ConfigOverrides(Map<String, String> env, boolean fromEnv, List<String> sets) {
        this.env = Map.copyOf(Objects.requireNonNull(env, "env"));
        this.fromEnv = fromEnv;
        this.sets = List.copyOf(sets);
    }

    /** The file alone; secrets from the process environment. */
    public static ConfigOverrides none() {
        return new ConfigOverrides(System.getenv(), false, List.of());
    }

    /** The process environment's {@code SLUICE_*} variables and {@code sets} ({@code key.path=value}). */
    public static ConfigOverrides fromProcess(List<String> sets) {
        return of(System.getenv(), sets);
    }

    /** {@code env}'s {@code SLUICE_*} variables and {@code sets}; secrets from {@code env}. */
    public static ConfigOverrides of(Map<String, String> env, List<String> sets) {
        return new ConfigOverrides(env, true, sets);
    }

    /** A copy with one more {@code key.path=value}, laid over the file like the others. */
    public ConfigOverrides withSet(String set) {
        List<String> more = new java.util.ArrayList<>(sets);
        more.add(set);
        return new ConfigOverrides(env, fromEnv, more);
    }

    String env(String name) {
        return env.get(name);
    }

    /** The file's tree with the overrides laid over it, which paths they set (and by what), and malformed ones. */
    record Applied(JsonNode tree, Map<String, String> origins, List<ConfigProblem> problems) {
    }

    Applied apply(JsonNode fileTree) {
        ObjectNode root = fileTree instanceof ObjectNode o ? o.deepCopy() : JsonNodeFactory.instance.objectNode();
        Map<String, String> origins = new LinkedHashMap<>();
        List<ConfigProblem> problems = new ArrayList<>();
        if (fromEnv) {
            for (EnvOverride o : ENV) {
                String raw = env.get(o.variable());
                if (raw == null || raw.isBlank()) {
                    continue;
                }
                String origin = "env " + o.variable();
                JsonNode value = switch (o.kind()) {
                    case TEXT -> TextNode.valueOf(raw.trim());
                    case PORT -> yamlValue(raw.trim());
                    case WORKERS -> workers(o, raw, origin, problems);
                };
                if (value != null) {
                    set(root, o.path(), value, origin, problems);
                    origins.put(o.path(), origin);
                }
            }
        }
        for (String s : sets) {
            int eq = s.indexOf('=');
            String path = eq < 0 ? s.trim() : s.substring(0, eq).trim();
            String origin = "--set " + path;
            if (eq < 0 || !PATH.matcher(path).matches()) {
                problems.add(new ConfigProblem(path, s + ": not an override (expected: --set key.path=value, "
                        + "e.g. --set listen.port=9000)", "--set"));
                continue;
            }
            if (set(root, path, yamlValue(s.substring(eq + 1)), origin, problems)) {
                origins.put(path, origin);
            }
        }
        return new Applied(root, origins, problems);
    }

    /** {@code http://h:1#bootstrap_port=8998,http://h2:1}: a list of {@code {url, bootstrap_port}} items. */
    private static JsonNode workers(EnvOverride o, String raw, String origin, List<ConfigProblem> problems) {
        ArrayNode list = JsonNodeFactory.instance.arrayNode();
        for (String item : raw.split(",")) {
            item = item.trim();
            if (item.isEmpty()) {
                continue;
            }
            int hash = item.indexOf('#');
            ObjectNode w = list.addObject().put("url", hash < 0 ? item : item.substring(0, hash));
            if (hash < 0) {
                continue;
            }
            for (String pair : item.substring(hash + 1).split("&")) {
                int eq = pair.indexOf('=');
                if (eq <= 0) {
                    problems.add(new ConfigProblem(o.path(), o.path() + ": " + item
                            + " (expected: URL or URL#bootstrap_port=PORT, comma-separated)", origin));
                    continue;
                }
                w.set(pair.substring(0, eq).trim(), yamlValue(pair.substring(eq + 1).trim()));
            }
        }
        return list;
    }

    /** A YAML value ({@code 9000} a number, {@code [a, b]} a list); text that is not YAML stays text; empty is null. */
    private static JsonNode yamlValue(String text) {
        if (text.isBlank()) {
            return null;
        }
        try {
            JsonNode v = YamlDocument.YAML.readTree(text);
            return v == null || v.isMissingNode() || v.isNull() ? null : v;
        } catch (JsonProcessingException e) {
            return TextNode.valueOf(text);
        }
    }

    /** Sets (or with a null value removes) {@code path} in {@code root}, making the mappings on the way. */
    private static boolean set(ObjectNode root, String path, JsonNode value, String origin, List<ConfigProblem> problems) {
        List<Object> segments = new ArrayList<>();
        Matcher m = SEGMENT.matcher(path);
        while (m.find()) {
            segments.add(m.group(1) != null ? m.group(1) : (Object) Integer.parseInt(m.group(2)));
        }
        JsonNode cur = root;
        for (int i = 0; i < segments.size(); i++) {
            Object seg = segments.get(i);
            boolean last = i == segments.size() - 1;
            Object next = last ? null : segments.get(i + 1);
            JsonNode fresh = next instanceof Integer ? JsonNodeFactory.instance.arrayNode()
                    : JsonNodeFactory.instance.objectNode();
            if (seg instanceof String key) {
                if (!(cur instanceof ObjectNode o)) {
                    problems.add(new ConfigProblem(path, path + ": " + key + " is not in a mapping", origin));
                    return false;
                }
                if (last) {
                    if (value == null) {
                        o.remove(key);
                    } else {
                        o.set(key, value);
                    }
                    return true;
                }
                JsonNode c = o.get(key);
                if (c == null || !(next instanceof Integer ? c.isArray() : c.isObject())) {
                    c = fresh;
                    o.set(key, c);
                }
                cur = c;
            } else {
                int idx = (Integer) seg;
                if (!(cur instanceof ArrayNode a) || idx > a.size()) {
                    problems.add(new ConfigProblem(path, path + ": no item " + idx + " (expected: an index of an "
                            + "existing item, or the next one)", origin));
                    return false;
                }
                if (last) {
                    if (value == null) {
                        if (idx < a.size()) {
                            a.remove(idx);
                        }
                    } else if (idx == a.size()) {
                        a.add(value);
                    } else {
                        a.set(idx, value);
                    }
                    return true;
                }
                if (idx == a.size()) {
                    a.add(fresh);
                } else if (!(next instanceof Integer ? a.get(idx).isArray() : a.get(idx).isObject())) {
                    a.set(idx, fresh);
                }
                cur = a.get(idx);
            }
        }
        return true;
    }
}
