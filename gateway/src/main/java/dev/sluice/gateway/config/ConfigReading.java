package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One reading of a configuration document by the readers: the problems found (all of them, not
 * the first), where each key stands in the file, which keys an override set, the {@link ConfigModel}
 * the getters record, and the effective values (defaults filled in) that {@code check-config} prints.
 */
final class ConfigReading {
    private final String source;
    private final boolean explore;
    private final ConfigModel model;
    private final Map<String, Integer> lines;
    private final Map<String, String> overridden;
    private final Function<String, String> env;
    private final ObjectNode effective = JsonNodeFactory.instance.objectNode();
    private final List<ConfigProblem> problems = new ArrayList<>();
    private final List<Long> orders = new ArrayList<>();

    private ConfigReading(String source, boolean explore, ConfigModel model, Map<String, Integer> lines,
                          Map<String, String> overridden, Function<String, String> env) {
        this.source = source;
        this.explore = explore;
        this.model = model;
        this.lines = lines;
        this.overridden = overridden;
        this.env = env;
    }

    /** A reading of a real document. */
    static ConfigReading of(String source, Map<String, Integer> lines, Map<String, String> overridden,
                            Function<String, String> env) {
        return new ConfigReading(source, false, new ConfigModel(), lines, overridden, env);
    }

    /** A reading of nothing that visits every key, list item and mapping entry, to record {@code model}. */
    static ConfigReading explore(ConfigModel model) {
        return new ConfigReading("", true, model, Map.of(), Map.of(), name -> null);
    }

    boolean explore() {
        return explore;
    }

    ConfigModel model() {
        return model;
    }

    /** The environment, for secrets named by the file ({@code workers.api_key_env}). */
    String env(String name) {
        return env.apply(name);
    }

    void problem(String path, String text) {
        add(new ConfigProblem(path, text, origin(path)), order(path));
    }

    /** A problem at a known line (a duplicate key's second occurrence). */
    void problem(String path, String text, int line) {
        add(new ConfigProblem(path, text, source + ":" + line), 2L * line);
    }

    /** A problem found before reading (a malformed override). */
    void problem(ConfigProblem p) {
        add(p, Long.MAX_VALUE);
    }

    private void add(ConfigProblem p, long order) {
        problems.add(p);
        orders.add(order);
    }

    /** Whether a problem was found at {@code path} or below it. */
    boolean hasProblemAt(String path) {
        return problems.stream().anyMatch(p -> p.path().equals(path) || p.path().startsWith(path + ".")
                || p.path().startsWith(path + "["));
    }

    boolean hasProblems() {
        return !problems.isEmpty();
    }

    /**
     * The problems in file order: by line; a missing key's after the block of its nearest ancestor in
     * the file; those from overrides after the file's.
     */
    List<ConfigProblem> problems() {
        List<Integer> idx = new ArrayList<>();
        for (int i = 0; i < problems.size(); i++) {
            idx.add(i);
        }
        idx.sort(Comparator.comparingLong(orders::get)); // stable: reading order among equals
        return idx.stream().map(problems::get).toList();
    }

    private long order(String path) {
        if (override(path) != null) {
            return Long.MAX_VALUE;
        }
        Integer line = lines.get(path);
        if (line != null) {
            return 2L * line;
        }
        String ancestor = ancestor(path);
        if (ancestor == null) {
            return 0;
        }
        int end = lines.get(ancestor);
        for (Map.Entry<String, Integer> e : lines.entrySet()) {
            String p = e.getKey();
            if (p.startsWith(ancestor + ".") || p.startsWith(ancestor + "[")) {
                end = Math.max(end, e.getValue());
            }
        }
        return 2L * end + 1;
    }

    private String origin(String path) {
        String o = override(path);
        if (o != null) {
            return o;
        }
        Integer line = line(path);
        return line == null ? source : source + ":" + line;
    }

    /** The override that set {@code path} or one of its ancestors, the most specific one. */
    private String override(String path) {
        String best = null;
        for (String p : overridden.keySet()) {
            if ((path.equals(p) || path.startsWith(p + ".") || path.startsWith(p + "["))
                    && (best == null || p.length() > best.length())) {
                best = p;
            }
        }
        return best == null ? null : overridden.get(best);
    }

    /** The line of {@code path} or, for a missing key, of its nearest ancestor present in the file. */
    private Integer line(String path) {
        String a = ancestor(path);
        return a == null ? null : lines.get(a);
    }

    /** {@code path} itself or its nearest ancestor that the file has; null when none has. */
    private String ancestor(String path) {
        String p = path;
        while (!p.isEmpty()) {
            if (lines.containsKey(p)) {
                return p;
            }
            int cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
            p = cut < 0 ? "" : p.substring(0, cut);
        }
        return null;
    }

    /** Records the value in force at {@code segments} (keys and list indexes). */
    /** Takes the value at {@code segments} out of the effective configuration (a key read, but not the file's to set). */
    void forget(List<Object> segments) {
        JsonNode parent = effective;
        for (int i = 0; i < segments.size() - 1 && parent != null; i++) {
            Object s = segments.get(i);
            parent = s instanceof Integer idx ? parent.get(idx) : parent.get(String.valueOf(s));
        }
        if (parent instanceof ObjectNode o && !segments.isEmpty()) {
            o.remove(String.valueOf(segments.get(segments.size() - 1)));
        }
    }

    void effective(List<Object> segments, JsonNode value) {
        if (segments.isEmpty()) {
            return;
        }
        JsonNode parent = effective;
        for (int i = 0; i < segments.size() - 1; i++) {
            parent = container(parent, segments.get(i), segments.get(i + 1) instanceof Integer);
        }
        Object last = segments.get(segments.size() - 1);
        if (last instanceof Integer idx && parent instanceof ArrayNode a) {
            while (a.size() <= idx) {
                a.addNull();
            }
            a.set(idx, value);
        } else if (parent instanceof ObjectNode o) {
            o.set(String.valueOf(last), value);
        }
    }

    private static JsonNode container(JsonNode parent, Object segment, boolean array) {
        if (parent instanceof ObjectNode o) {
            String key = String.valueOf(segment);
            JsonNode c = o.get(key);
            if (c == null || !c.isContainerNode()) {
                c = array ? o.putArray(key) : o.putObject(key);
            }
            return c;
        }
        ArrayNode a = (ArrayNode) parent;
        int idx = (Integer) segment;
        while (a.size() <= idx) {
            a.addNull();
        }
        JsonNode c = a.get(idx);
        if (c == null || !c.isContainerNode()) {
            c = array ? JsonNodeFactory.instance.arrayNode() : JsonNodeFactory.instance.objectNode();
            a.set(idx, c);
        }
        return c;
    }

    /** The effective values, each mapping's keys in the order the model declares them. */
    ObjectNode effectiveTree() {
        return (ObjectNode) ordered(effective, "");
    }

    private JsonNode ordered(JsonNode n, String schemaPath) {
        if (n instanceof ArrayNode a) {
            ArrayNode out = JsonNodeFactory.instance.arrayNode();
            a.forEach(item -> out.add(ordered(item, schemaPath + "[]")));
            return out;
        }
        if (!(n instanceof ObjectNode o)) {
            return n;
        }
        ConfigKey key = model.find(schemaPath).orElse(null);
        Map<String, JsonNode> fields = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            fields.put(e.getKey(), e.getValue());
        }
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        if (key != null && key.type() == ConfigKey.Type.OBJECT) {
            for (String p : key.properties()) {
                JsonNode v = fields.remove(p);
                if (v != null) {
                    out.set(p, ordered(v, ConfigModel.child(schemaPath, p)));
                }
            }
        }
        boolean map = key != null && key.type() == ConfigKey.Type.MAP;
        fields.forEach((k, v) -> out.set(k, ordered(v, ConfigModel.child(schemaPath, map ? "*" : k))));
        return out;
    }
}
