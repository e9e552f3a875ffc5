package dev.sluice.testbed;

import dev.sluice.testbed.cli.ClusterCommand;
import dev.sluice.testbed.cli.CompareCommand;
import dev.sluice.testbed.cli.LoadCommand;
import dev.sluice.testbed.cli.StaticBackendCommand;
import dev.sluice.testbed.relay.RelayBenchCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the testbed jar: {@code sluice-testbed cluster|load|compare ...}. */
@Command(name = "sluice-testbed", mixinStandardHelpOptions = true, version = "sluice-testbed 0.1.0",
        description = "Simulated SGLang and vLLM workers (PD or unified) for developing and testing the Sluice gateway.",
        subcommands = {ClusterCommand.class, LoadCommand.class, CompareCommand.class,
                StaticBackendCommand.class, RelayBenchCommand.class, dev.sluice.testbed.cli.OfflineCommand.class})
public final class TestbedMain implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        System.exit(new CommandLine(new TestbedMain()).execute(args));
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing required subcommand");
    }
}
