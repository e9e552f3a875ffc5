package dev.sluice.gateway.cli;

import dev.sluice.gateway.cacheview.KvViewCapacity;
import dev.sluice.gateway.config.LoadedConfig;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code check-config --config FILE [--set KEY=VALUE]...}: validates the configuration as
 * {@code serve} would read it (file, environment overrides, {@code --set}) and prints the
 * effective configuration with every default filled in, or every problem at once (where, key,
 * value, what was expected). Exit 0 when valid, 1 when not.
 */
@Command(name = "check-config", mixinStandardHelpOptions = true,
        description = {"Validate a configuration and print the effective configuration (defaults filled in, "
                + "overrides applied), or every problem in it. Exit 0 valid, 1 invalid."})
public final class CheckConfigCommand implements Callable<Integer> {
    @Mixin
    ConfigOptions source = new ConfigOptions();

    @Option(names = {"-q", "--quiet"}, description = "print nothing when the configuration is valid")
    boolean quiet;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        LoadedConfig loaded = source.load(spec.commandLine().getErr(), "invalid configuration");
        if (loaded == null) {
            return 1;
        }
        // this JVM's heap may not be serve's (another -Xmx): a warning here; serve checks its own and refuses
        KvViewCapacity.problem(loaded.config(), Runtime.getRuntime().maxMemory()).ifPresent(p -> spec.commandLine()
                .getErr().println("sluice-gateway: warning: " + p + " (serve started with this heap refuses it)"));
        if (!quiet) { // a note is no problem: --quiet says nothing about it
            for (String note : dev.sluice.gateway.config.ConfigNotes.of(loaded.config())) {
                spec.commandLine().getErr().println("sluice-gateway: note: " + note);
            }
        }
        spec.commandLine().getErr().flush();
        if (!quiet) {
            source.printEffective(spec.commandLine().getOut(), loaded);
        }
        return 0;
    }
}
