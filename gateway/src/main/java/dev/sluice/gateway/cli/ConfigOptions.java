package dev.sluice.gateway.cli;

import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigWarnings;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.config.ConfigProblem;
import dev.sluice.gateway.config.LoadedConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The options that say where the configuration comes from, shared by {@code serve} and
 * {@code check-config}: the file, and {@code --set} overrides laid over it and over the
 * {@code SLUICE_*} environment variables (docs/configuration.md, Overrides).
 */
public final class ConfigOptions {
    @Option(names = {"-c", "--config"}, required = true, paramLabel = "FILE",
            description = "gateway YAML configuration (see config/gateway.yaml)")
    Path config;

    @Option(names = "--set", paramLabel = "KEY=VALUE",
            description = "override one key, e.g. --set listen.port=9000 --set workers.prefill[0].url=http://10.0.0.1:30000"
                    + " (a YAML value; over SLUICE_* environment variables, which are over the file)")
    List<String> sets = new ArrayList<>();

    /** The environment the overrides and secrets come from (tests replace it). */
    Map<String, String> env = System.getenv();

    public Path file() {
        return config;
    }

    public ConfigOverrides overrides() {
        return ConfigOverrides.of(env, sets);
    }

    /** Reads and validates; null after printing every problem to {@code err}. */
    LoadedConfig load(PrintWriter err, String what) {
        try {
            LoadedConfig loaded = ConfigLoader.check(config, overrides());
            for (String w : ConfigWarnings.of(loaded.config())) {
                err.println("sluice-gateway: warning: " + w);
            }
            err.flush();
            return loaded;
        } catch (ConfigException e) {
            printProblems(err, what, e.problems());
            return null;
        }
    }

    private void printProblems(PrintWriter err, String what, List<ConfigProblem> problems) {
        if (problems.size() == 1) {
            err.println("sluice-gateway: " + what + ": " + problems.get(0).located());
            return;
        }
        err.println("sluice-gateway: " + what + ": " + problems.size() + " problems in " + config + ":");
        for (ConfigProblem p : problems) {
            err.println("  " + p.located());
        }
    }

    /** The effective configuration, with a header naming the file and any secret (never its value). */
    void printEffective(PrintWriter out, LoadedConfig loaded) {
        out.println("# configuration OK: " + config + " (effective configuration: defaults filled in, overrides applied)");
        String keyEnv = loaded.effective().path("workers").path("api_key_env").asText("");
        if (!keyEnv.isEmpty()) {
            out.println("# workers.api_key_env: " + keyEnv + " is set (***); sent to workers as Authorization: Bearer ***");
        }
        loaded.config().admin().token().ifPresent(t -> out.println("# admin token: "
                + (loaded.effective().path("admin").has("token_file") ? "admin.token_file" : "SLUICE_ADMIN_TOKEN")
                + " (***); POST /admin/reload needs Authorization: Bearer ***"));
        out.print(loaded.effectiveYaml());
        out.flush();
    }
}
