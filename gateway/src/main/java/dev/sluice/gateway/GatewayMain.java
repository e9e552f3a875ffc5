package dev.sluice.gateway;

import dev.sluice.gateway.cli.CheckConfigCommand;
import dev.sluice.gateway.cli.HashKeyCommand;
import dev.sluice.gateway.cli.SchemaCommand;
import dev.sluice.gateway.cli.ServeCommand;
import dev.sluice.gateway.cli.StatusCommand;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
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
        System.exit(execute(new CommandLine(new GatewayMain()), args));
    }

    /**
     * Runs the command with one standard-output and one standard-error writer for every subcommand, and
     * flushes both before returning: {@code System.exit} does not flush a {@link PrintWriter}, and a
     * command that ends with {@code print} (no line end, so no auto-flush) lost whatever was still in
     * the writer's buffer ({@code schema} printed 40,960 of its 53,025 bytes).
     */
    static int execute(CommandLine cli, String... args) {
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)), true);
        PrintWriter err = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8)), true);
        cli.setOut(out);
        cli.setErr(err);
        try {
            return cli.execute(args);
        } finally {
            out.flush();
            err.flush();
        }
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.err);
    }
}
