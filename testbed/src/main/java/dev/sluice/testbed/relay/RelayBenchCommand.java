package dev.sluice.testbed.relay;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code sluice-testbed relay-bench}: the tools of {@code scripts/bench-relay}: a worker that streams
 * as fast as the socket takes it ({@code firehose}), a reader that measures events per second
 * ({@code read}), many slow readers ({@code slow-readers}) and many idle keep-alive connections
 * ({@code idle}).
 */
@Command(name = "relay-bench", mixinStandardHelpOptions = true,
        description = "Stream relay benchmark tools: firehose worker, fast and slow readers, idle connections.",
        subcommands = {FirehoseCommand.class, ReadCommand.class, SlowReadersCommand.class, IdleConnectionsCommand.class})
public final class RelayBenchCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing required subcommand");
    }
}
