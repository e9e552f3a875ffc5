package dev.sluice.gateway;

import dev.sluice.gateway.cli.CheckConfigCommand;
import dev.sluice.gateway.cli.HashKeyCommand;
import dev.sluice.gateway.cli.SchemaCommand;
import dev.sluice.gateway.cli.ServeCommand;
import dev.sluice.gateway.cli.StatusCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code java -jar sluice-gateway.jar <command>}. */
@Command(name = "sluice-gateway", mixinStandardHelpOptions = true, version = "sluice-gateway 0.1.0",
        description = "Admission-controlling gateway for prefill/decode disaggregated LLM serving.",
        subcommands = {ServeCommand.class, CheckConfigCommand.class, SchemaCommand.class, HashKeyCommand.class, StatusCommand.class,
                CommandLine.HelpCommand.class})
public final class GatewayMain implements Runnable {
    public static void main(String[] args) {
        // Netty's default leak detector samples 1 buffer in 128 and records a stack trace for it: about
        // 2-3% of an event loop's time in the request-path profile (docs/benchmarks.md). The tests run
        // with it at "paranoid" and fail on any report; in production it is off unless asked for
        // (-Dio.netty.leakDetection.level=simple, e.g. in JAVA_OPTS of deploy/systemd/sluice-gateway.env).
        if (System.getProperty("io.netty.leakDetection.level") == null) {
            System.setProperty("io.netty.leakDetection.level", "disabled");
        }
        System.exit(new CommandLine(new GatewayMain()).execute(args));
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.err);
    }
}
