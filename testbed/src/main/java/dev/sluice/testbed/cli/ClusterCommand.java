package dev.sluice.testbed.cli;

import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sluice-testbed cluster}: runs a simulated SGLang PD cluster until SIGTERM or Ctrl-C. */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = "Run simulated SGLang prefill/decode servers on loopback until stopped.")
public final class ClusterCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--prefill", defaultValue = "1", description = "Prefill servers (default: ${DEFAULT-VALUE}).")
    int prefill;

    @Option(names = "--decode", defaultValue = "1", description = "Decode servers (default: ${DEFAULT-VALUE}).")
    int decode;

    @Option(names = "--base-port", required = true,
            description = "Prefill i on P+i, decode j on P+N+j, bootstrap of prefill i on P+N+M+i; 0 = ephemeral ports.")
    int basePort;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to bind (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--prefill-tokens-per-second", defaultValue = "20000",
            description = "Prompt tokens one prefill computes per second (default: ${DEFAULT-VALUE}).")
    double prefillTokensPerSecond;

    @Option(names = "--decode-step", defaultValue = "20ms", converter = DurationConverter.class,
            description = "Time of one decode step; 0ms = as fast as the client reads (default: ${DEFAULT-VALUE}).")
    Duration decodeStep;

    @Option(names = "--decode-max-batch", defaultValue = "64",
            description = "Requests decoding at once per decode server (default: ${DEFAULT-VALUE}).")
    int decodeMaxBatch;

    @Option(names = "--kv-wait", defaultValue = "300s", converter = DurationConverter.class,
            description = "How long a decode waits for KV before a KV transfer error (default: ${DEFAULT-VALUE}).")
    Duration kvWait;

    @Option(names = "--bootstrap-timeout", defaultValue = "300s", converter = DurationConverter.class,
            description = "How long a prefill holds KV for its decode (default: ${DEFAULT-VALUE}).")
    Duration bootstrapTimeout;

    @Option(names = "--model", defaultValue = "sim-model", description = "Model name (default: ${DEFAULT-VALUE}).")
    String model;

    @Option(names = "--max-tokens", defaultValue = "16",
            description = "Tokens generated when a request names no maximum (default: ${DEFAULT-VALUE}).")
    int defaultMaxTokens;

    @Option(names = "--threads", defaultValue = "2", description = "Event loop threads (default: ${DEFAULT-VALUE}).")
    int threads;

    @Override
    public Integer call() throws Exception {
        SimConfig cfg = SimConfig.defaults().withHost(host).withPrefillTokensPerSecond(prefillTokensPerSecond)
                .withDecodeStep(decodeStep).withDecodeMaxBatch(decodeMaxBatch).withKvWait(kvWait)
                .withBootstrapTimeout(bootstrapTimeout).withModel(model).withDefaultMaxTokens(defaultMaxTokens)
                .withEventLoopThreads(threads);
        SimCluster cluster = SimCluster.start(prefill, decode, basePort, cfg);
        // the JVM exits once the hook is done; main must not call System.exit during shutdown (it would block)
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::close, "sim-shutdown"));
        PrintWriter out = spec.commandLine().getOut();
        for (PrefillServer p : cluster.prefills()) {
            out.printf("prefill %d url=%s bootstrap_port=%d%n", cluster.prefills().indexOf(p), p.url(), p.bootstrapPort());
        }
        for (DecodeServer d : cluster.decodes()) {
            out.printf("decode %d url=%s%n", cluster.decodes().indexOf(d), d.url());
        }
        out.println("cluster ready");
        out.flush();
        new CountDownLatch(1).await(); // until SIGTERM / Ctrl-C
        return 0;
    }
}
