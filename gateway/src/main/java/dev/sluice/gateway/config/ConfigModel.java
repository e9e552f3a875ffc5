package dev.sluice.gateway.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Every key the readers know, as they recorded it ({@link ConfigKey}). {@link ConfigLoader#model()}
 * builds the whole of it by running the readers over an empty document in each disaggregation mode,
 * with a list's and a mapping's item visited once even when there is none.
 */
public final class ConfigModel {
    private final Map<String, ConfigKey> keys = new LinkedHashMap<>();

    ConfigModel() {
        key("").type(ConfigKey.Type.OBJECT);
    }

    ConfigKey key(String path) {
        return keys.computeIfAbsent(path, ConfigKey::new);
    }

    public Optional<ConfigKey> find(String path) {
        return Optional.ofNullable(keys.get(path));
    }

    public ConfigKey root() {
        return keys.get("");
    }

    /** An object's keys, a list's item or a mapping's entry. */
    public List<ConfigKey> children(ConfigKey k) {
        List<ConfigKey> out = new ArrayList<>();
        switch (k.type()) {
            case OBJECT -> k.properties().forEach(p -> find(child(k.path(), p)).ifPresent(out::add));
            case LIST -> find(k.path() + "[]").ifPresent(out::add);
            case MAP -> find(child(k.path(), "*")).ifPresent(out::add);
            default -> {
            }
        }
        return out;
    }

    /** Every key below the root, depth first, each object's keys in their declared order. */
    public List<ConfigKey> walk() {
        List<ConfigKey> out = new ArrayList<>();
        walk(root(), out);
        return out;
    }

    private void walk(ConfigKey k, List<ConfigKey> out) {
        for (ConfigKey c : children(k)) {
            out.add(c);
            walk(c, out);
        }
    }

    static String child(String parent, String key) {
        return parent.isEmpty() ? key : parent + "." + key;
    }
}
