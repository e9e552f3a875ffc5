package dev.sluice.testbed;

import dev.sluice.testbed.cli.ClusterCommand;
import dev.sluice.testbed.cli.CompareCommand;
import dev.sluice.testbed.cli.LoadCommand;
import dev.sluice.testbed.cli.StaticBackendCommand;
import dev.sluice.testbed.relay.RelayBenchCommand;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
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
        // one writer pair for every subcommand, flushed before exit: System.exit does not flush a
        // PrintWriter, and output ending in print() (no line end, no auto-flush) would be cut short
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)), true);
        PrintWriter err = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8)), true);
        CommandLine cli = new CommandLine(new TestbedMain()).setOut(out).setErr(err);
        int code;
        try {
            code = cli.execute(args);
        } finally {
            out.flush();
            err.flush();
        }
        System.exit(code);
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing required subcommand");
    }
}
