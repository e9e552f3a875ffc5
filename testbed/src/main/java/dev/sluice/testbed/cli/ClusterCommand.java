package dev.sluice.testbed.cli;

import dev.sluice.testbed.sim.AbortOnDisconnect;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.UnifiedServer;
import dev.sluice.testbed.sim.VllmDecodeServer;
import dev.sluice.testbed.sim.VllmPrefillServer;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code sluice-testbed cluster}: runs a simulated cluster (SGLang PD, vLLM PD or unified servers)
 * until SIGTERM or Ctrl-C.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = "Run simulated prefill/decode (SGLang or vLLM) or unified servers on loopback until stopped.")
public final class ClusterCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--mode", defaultValue = "sglang",
            description = "sglang (PD, bootstrap rooms), vllm (PD, kv_transfer_params) or unified (no PD) "
                    + "(default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--prefill", description = "Prefill servers (default: 1; 0 in unified mode, where it must be 0).")
    Integer prefill;

    @Option(names = "--decode", defaultValue = "1",
            description = "Decode servers, or unified servers in unified mode (default: ${DEFAULT-VALUE}).")
    int decode;

    @Option(names = "--base-port", required = true,
            description = "Prefill i on P+i, decode (or unified) j on P+N+j, bootstrap (sglang) or KV side channel "
                    + "(vllm) of prefill i on P+N+M+i; 0 = ephemeral ports.")
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
            description = "Requests decoding at once per decode server, SGLang's --max-running-requests; with "
                    + "--dp-size each rank runs its share, this divided by the ranks (default: ${DEFAULT-VALUE}).")
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

    @Option(names = "--vllm-abort-timeout", defaultValue = "480s", converter = DurationConverter.class,
            description = "How long a vLLM prefill holds unread KV (VLLM_NIXL_ABORT_REQUEST_TIMEOUT) "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration vllmAbortTimeout;

    @Option(names = "--prefix-cache-tokens", defaultValue = "" + SimConfig.DEFAULT_PREFIX_CACHE_TOKENS,
            description = "Prefix cache size of every server that prefills, in tokens; 0 = off "
                    + "(default: ${DEFAULT-VALUE}).")
    long prefixCacheTokens;

    @Option(names = "--health-generation", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "/health runs a one-token generation like /health_generate, as SGLang does by default; "
                    + "--no-health-generation answers it at once (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0).")
    boolean healthGeneration;

    @Option(names = "--health-check-timeout", defaultValue = "20s", converter = DurationConverter.class,
            description = "How long a generation health check waits for output before 503 "
                    + "(SGLANG_HEALTH_CHECK_TIMEOUT) (default: ${DEFAULT-VALUE}).")
    Duration healthCheckTimeout;

    @Option(names = "--dp-size", defaultValue = "1",
            description = "Data-parallel ranks per server: metrics and loads per rank (default: ${DEFAULT-VALUE}).")
    int dpSize;

    @Option(names = "--enable-metrics", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Serve /metrics (SGLang's --enable-metrics); --no-enable-metrics answers 404 "
                    + "(default: ${DEFAULT-VALUE}).")
    boolean enableMetrics;

    @Option(names = "--device-timer-metrics", defaultValue = "false",
            description = "Export sglang:gpu_execution_seconds_total, as SGLang does with "
                    + "SGLANG_ENABLE_METRICS_DEVICE_TIMER=1 (a gateway derives the prefill rate from it).")
    boolean deviceTimerMetrics;

    @Option(names = "--context-length", defaultValue = "" + SimConfig.DEFAULT_CONTEXT_LENGTH,
            description = "The model's context length; longer requests are refused (default: ${DEFAULT-VALUE}).")
    int contextLength;

    @Option(names = "--admin-api-key",
            description = "When set, /abort_request needs Authorization: Bearer <key> (SGLang's --admin-api-key).")
    String adminApiKey;

    @Option(names = "--max-queued-requests", defaultValue = "0",
            description = "Unified servers refuse (503) a request when this many wait; 0 = unbounded; PD servers "
                    + "ignore it, as SGLang does (default: ${DEFAULT-VALUE}).")
    int maxQueuedRequests;

    @Option(names = "--abort-on-disconnect", defaultValue = "sglang",
            description = "When an SGLang server aborts a request whose client closed its connection: sglang (as "
                    + "the real server: a started stream 2 s after the disconnect, otherwise at the next 4 s "
                    + "is_disconnected check or, non-streamed, at the next 50-token output), immediate, or never "
                    + "(it runs to its end). vLLM servers always abort at once (default: ${DEFAULT-VALUE}).")
    String abortOnDisconnect;

    @Option(names = "--kv-events-endpoint",
            description = "Publish each prefill server's prefix-cache events over ZMQ in SGLang's format (SGLang's "
                    + "--kv-events-config '{\"publisher\":\"zmq\",\"endpoint\":...}'), e.g. tcp://127.0.0.1:5557: "
                    + "prefill i's DP rank r binds port + i x dp-size + r (one stream per rank, as SGLang). Off by default.")
    String kvEventsEndpoint;

    @Override
    public Integer call() throws Exception {
        SimMode simMode = parseMode();
        int prefills = prefill != null ? prefill : simMode == SimMode.UNIFIED ? 0 : 1;
        SimConfig cfg = SimConfig.defaults().withHost(host).withPrefillTokensPerSecond(prefillTokensPerSecond)
                .withDecodeStep(decodeStep).withDecodeMaxBatch(decodeMaxBatch).withKvWait(kvWait)
                .withBootstrapTimeout(bootstrapTimeout).withModel(model).withDefaultMaxTokens(defaultMaxTokens)
                .withEventLoopThreads(threads).withVllmAbortTimeout(vllmAbortTimeout)
                .withPrefixCacheTokens(prefixCacheTokens);
        SimCluster cluster;
        try {
            cfg = cfg.withHealthGeneration(healthGeneration).withHealthCheckTimeout(healthCheckTimeout)
                    .withDpSize(dpSize).withKvEventsEndpoint(kvEventsEndpoint).withEnableMetrics(enableMetrics).withDeviceTimerMetrics(deviceTimerMetrics)
                    .withContextLength(contextLength).withAdminApiKey(adminApiKey)
                    .withMaxQueuedRequests(maxQueuedRequests)
                    .withAbortOnDisconnect(AbortOnDisconnect.parse(abortOnDisconnect));
            cluster = SimCluster.start(prefills, decode, basePort, cfg, simMode);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        // the JVM exits once the hook is done; main must not call System.exit during shutdown (it would block)
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::close, "sim-shutdown"));
        print(cluster, spec.commandLine().getOut());
        new CountDownLatch(1).await(); // until SIGTERM / Ctrl-C
        return 0;
    }

    private SimMode parseMode() {
        try {
            return SimMode.valueOf(mode.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--mode: " + mode + " (expected: sglang, vllm or unified)");
        }
    }

    /** One line per server, then "cluster ready": scripts wait for that line and read the ports. */
    private static void print(SimCluster cluster, PrintWriter out) {
        for (PrefillServer p : cluster.prefills()) {
            out.printf("prefill %d url=%s bootstrap_port=%d%n", cluster.prefills().indexOf(p), p.url(), p.bootstrapPort());
        }
        for (DecodeServer d : cluster.decodes()) {
            out.printf("decode %d url=%s%n", cluster.decodes().indexOf(d), d.url());
        }
        for (VllmPrefillServer p : cluster.vllmPrefills()) {
            out.printf("prefill %d url=%s kv_port=%d engine_id=%s%n", cluster.vllmPrefills().indexOf(p), p.url(),
                    p.kvPort(), p.engineId());
        }
        for (VllmDecodeServer d : cluster.vllmDecodes()) {
            out.printf("decode %d url=%s%n", cluster.vllmDecodes().indexOf(d), d.url());
        }
        for (UnifiedServer u : cluster.unified()) {
            out.printf("unified %d url=%s%n", cluster.unified().indexOf(u), u.url());
        }
        for (var w : cluster.prefillWorkers().isEmpty() ? cluster.decodeWorkers() : cluster.prefillWorkers()) {
            w.kvEventsEndpoint().ifPresent(e -> out.printf("kv_events url=%s endpoint=%s%n", w.url(), e));
        }
        out.println("cluster ready");
        out.flush();
    }
}
