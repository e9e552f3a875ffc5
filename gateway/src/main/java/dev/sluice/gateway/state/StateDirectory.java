package dev.sluice.gateway.state;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Where a gateway keeps what it learned for its next start, as {@code admission.prefill_rate.state_file}
 * says: a path, {@code none} (nowhere), or {@code auto} (the default), which is the file {@link #FILE_NAME}
 * in the first of {@code $SLUICE_STATE_DIRECTORY} ({@code none} there turns it off: tests and benchmarks),
 * {@code $STATE_DIRECTORY} (what systemd's {@code StateDirectory=} sets; the first of a colon-separated
 * list), {@code $XDG_STATE_HOME/sluice}, {@code ~/.local/state/sluice}.
 */
public final class StateDirectory {
    /** The setting's default. */
    public static final String AUTO = "auto";
    /** The setting (or {@code SLUICE_STATE_DIRECTORY}) that keeps nothing. */
    public static final String NONE = "none";
    /** The file's name in the state directory. */
    public static final String FILE_NAME = "prefill-rates.json";

    private StateDirectory() {
    }

    /**
     * The state file for {@code setting}, with the environment {@code env} and the home directory {@code home}
     * (may be null or empty: then no {@code ~} fallback); empty: none.
     */
    public static Optional<Path> stateFile(String setting, Map<String, String> env, String home) {
        return stateFile(setting, Objects.requireNonNull(env, "env")::get, home);
    }

    /** As above, with the environment as a lookup (the configuration's, which tests can give). */
    public static Optional<Path> stateFile(String setting, Function<String, String> env, String home) {
        Objects.requireNonNull(env, "env");
        String s = setting == null ? AUTO : setting.trim();
        if (s.equals(NONE)) {
            return Optional.empty();
        }
        if (!s.equals(AUTO)) {
            return Optional.of(Path.of(s));
        }
        return directory(env, home).map(d -> d.resolve(FILE_NAME));
    }

    /** The directory {@code auto} stands for; empty when {@code SLUICE_STATE_DIRECTORY=none} or none can be named. */
    public static Optional<Path> directory(Function<String, String> env, String home) {
        String own = set(env.apply("SLUICE_STATE_DIRECTORY"));
        if (own != null) {
            return own.equals(NONE) ? Optional.empty() : Optional.of(Path.of(own));
        }
        String systemd = set(env.apply("STATE_DIRECTORY"));
        if (systemd != null) {
            return Optional.of(Path.of(systemd.split(":")[0]));
        }
        String xdg = set(env.apply("XDG_STATE_HOME"));
        if (xdg != null && Path.of(xdg).isAbsolute()) { // the XDG spec: a relative value is to be ignored
            return Optional.of(Path.of(xdg, "sluice"));
        }
        String h = set(home);
        return h == null || h.equals("?") ? Optional.empty() : Optional.of(Path.of(h, ".local", "state", "sluice"));
    }

    private static String set(String v) {
        return v == null || v.isBlank() ? null : v.trim();
    }
}
