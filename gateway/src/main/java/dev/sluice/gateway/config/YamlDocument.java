package dev.sluice.gateway.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The YAML text of a configuration: its tree, the line each key stands on (so that problems are
 * reported in file order, with their line), and its duplicate keys. A YAML parser keeps the last of
 * two equal keys of a mapping without a word; here each one is a problem naming the key and both
 * lines (Jackson's {@code STRICT_DUPLICATE_DETECTION} would stop at the first, with no path).
 */
final class YamlDocument {
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    /** A key written twice in one mapping. */
    record Duplicate(String path, int firstLine, int line) {
        String text() {
            return path + ": written twice, lines " + firstLine + " and " + line + " (expected: each key once)";
        }
    }

    final JsonNode tree;
    final Map<String, Integer> lines;
    final List<Duplicate> duplicates;

    private YamlDocument(JsonNode tree, Map<String, Integer> lines, List<Duplicate> duplicates) {
        this.tree = tree;
        this.lines = lines;
        this.duplicates = duplicates;
    }

    /** @throws ConfigException when the text is not YAML at all */
    static YamlDocument parse(String yaml, String source) {
        JsonNode tree;
        try {
            tree = YAML.readTree(yaml);
        } catch (JsonProcessingException e) {
            throw new ConfigException(source + ": not valid YAML (" + e.getOriginalMessage() + ")", e);
        }
        Map<String, Integer> lines = new LinkedHashMap<>();
        List<Duplicate> duplicates = new ArrayList<>();
        try (JsonParser p = YAML.getFactory().createParser(yaml)) {
            scan(p, lines, duplicates);
        } catch (IOException e) {
            throw new ConfigException(source + ": not valid YAML (" + e.getMessage() + ")", e);
        }
        return new YamlDocument(tree, lines, duplicates);
    }

    private static final class Frame {
        final String path;
        final boolean array;
        int index;
        String field;
        final Map<String, Integer> seen = new HashMap<>();

        Frame(String path, boolean array) {
            this.path = path;
            this.array = array;
        }

        String valuePath() {
            return array ? path + "[" + index++ + "]" : field;
        }
    }

    private static void scan(JsonParser p, Map<String, Integer> lines, List<Duplicate> duplicates) throws IOException {
        Deque<Frame> stack = new ArrayDeque<>();
        JsonToken t;
        while ((t = p.nextToken()) != null) {
            int line = p.currentTokenLocation().getLineNr();
            Frame top = stack.peek();
            switch (t) {
                case FIELD_NAME -> {
                    String name = p.currentName();
                    String path = ConfigModel.child(top.path, name);
                    Integer first = top.seen.putIfAbsent(name, line);
                    if (first != null) {
                        duplicates.add(new Duplicate(path, first, line));
                        // the last one stands (as in the tree): forget where the first one's keys were
                        lines.keySet().removeIf(k -> k.startsWith(path + ".") || k.startsWith(path + "["));
                        lines.put(path, line);
                    }
                    lines.putIfAbsent(path, line);
                    top.field = path;
                }
                case START_OBJECT, START_ARRAY -> {
                    String path = top == null ? "" : top.valuePath();
                    if (top != null && top.array) {
                        lines.putIfAbsent(path, line);
                    }
                    stack.push(new Frame(path, t == JsonToken.START_ARRAY));
                }
                case END_OBJECT, END_ARRAY -> stack.pop();
                default -> {
                    if (top != null && top.array) {
                        lines.putIfAbsent(top.valuePath(), line);
                    }
                }
            }
        }
    }
}
