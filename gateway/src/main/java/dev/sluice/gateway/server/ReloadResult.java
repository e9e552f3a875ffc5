package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * What one reload did: {@code result} is the {@code result} label of
 * {@code sluice_config_reloads_total}: {@code applied} (the file's reloadable settings are in
 * force), {@code unchanged} (same content as the running one), {@code invalid} (refused: the
 * running configuration stays whole).
 *
 * @param applied         what changed and is now in force ("admission", "timeouts", ...)
 * @param restartRequired keys that differ but only take effect after a restart
 */
public record ReloadResult(String result, String trigger, String hash, String error, List<String> applied,
                           List<String> restartRequired) {
    public static final List<String> RESULTS = List.of("applied", "unchanged", "invalid");

    public ReloadResult {
        applied = List.copyOf(applied);
        restartRequired = List.copyOf(restartRequired);
    }

    public boolean ok() {
        return !"invalid".equals(result);
    }

    public ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("result", result).put("trigger", trigger).put("config_hash", hash);
        if (error != null) {
            o.put("error", error);
        }
        applied.forEach(o.putArray("applied")::add);
        restartRequired.forEach(o.putArray("restart_required")::add);
        return o;
    }
}
