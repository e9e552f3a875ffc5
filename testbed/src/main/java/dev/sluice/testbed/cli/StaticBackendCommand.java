package dev.sluice.testbed.cli;

import dev.sluice.testbed.staticbackend.StaticBackend;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sluice-testbed static-backend}: the fixed-answer backend of the proxy benchmark, until SIGTERM. */
@Command(name = "static-backend", mixinStandardHelpOptions = true,
        description = "Serve a fixed chat completion to any POST (one event loop, keep-alive) until stopped: "
                + "the backend of proxy overhead benchmarks.")
public final class StaticBackendCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--port", required = true, description = "Port to listen on (0 = any free port).")
    int port;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to bind (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--kv-transfer-params",
            description = "Add kv_transfer_params to the answer, as a vLLM prefill in NIXL mode does.")
    boolean kvTransferParams;

    @Option(names = "--delay-ms", defaultValue = "0",
            description = "Hold every POST answer this many milliseconds (health checks stay immediate) "
                    + "(default: ${DEFAULT-VALUE}).")
    long delayMs;

    @Override
    public Integer call() throws Exception {
        StaticBackend backend;
        try {
            backend = StaticBackend.start(new StaticBackend.Options(host, port, kvTransferParams,
                    Duration.ofMillis(delayMs)));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        Runtime.getRuntime().addShutdownHook(new Thread(backend::close, "static-backend-shutdown"));
        PrintWriter out = spec.commandLine().getOut();
        out.printf("static-backend listening address=%s:%d transport=%s body_bytes=%d kv_transfer_params=%s "
                + "delay_ms=%d%n", host, backend.port(), StaticBackend.transport(), backend.completionBodyBytes(),
                kvTransferParams, delayMs);
        out.flush();
        new CountDownLatch(1).await(); // until SIGTERM / Ctrl-C
        return 0;
    }
}
