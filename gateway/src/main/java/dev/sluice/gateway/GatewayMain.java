package dev.sluice.gateway;

import dev.sluice.gateway.cli.ServeCommand;
import dev.sluice.gateway.cli.StatusCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code java -jar sluice-gateway.jar <command>}. */
@Command(name = "sluice-gateway", mixinStandardHelpOptions = true, version = "sluice-gateway 0.1.0",
        description = "Admission-controlling gateway for prefill/decode disaggregated LLM serving.",
        subcommands = {ServeCommand.class, StatusCommand.class, CommandLine.HelpCommand.class})
public final class GatewayMain implements Runnable {
    public static void main(String[] args) {
        System.exit(new CommandLine(new GatewayMain()).execute(args));
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.err);
    }
}
