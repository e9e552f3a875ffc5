package dev.sluice.testbed.sim;

import java.time.Duration;
import java.util.Objects;

/**
 * Immutable settings of a simulated cluster. Start from {@link #defaults()} and change fields with
 * the {@code with...} methods; every value is validated when the record is built.
 *
 * @param host                   loopback address every server binds to
 * @param prefillTokensPerSecond prompt tokens one prefill server processes per second (one request at a time)
 * @param decodeStep             time of one decode step (every running request emits one token);
 *                               {@link Duration#ZERO} emits as fast as each client socket accepts bytes
 * @param decodeMaxBatch         requests decoding at once on one decode server; the rest wait
 * @param kvWait                 how long a decode waits for the KV of its room before failing the request
 * @param bootstrapTimeout       how long a prefill holds computed KV for its decode peer
 * @param model                  model name reported by every endpoint
 * @param defaultMaxTokens       tokens generated when a request names no maximum
 * @param eventLoopThreads       threads of the event loop group shared by the cluster's servers
 * @param journalLimit           requests (and aborts) each server remembers; older entries are dropped
 * @param prefixCacheTokens      capacity, in tokens, of the simulated prefix cache of every server that
 *                               prefills (LRU of 16-token blocks); 0 turns it off
 * @param vllmAbortTimeout       how long a vLLM prefill holds the KV blocks of an answered prefill leg for
 *                               its decode ({@code VLLM_NIXL_ABORT_REQUEST_TIMEOUT}); unfetched, they are
 *                               counted in {@code strandedKv}
 * @param deviceTimerMetrics     export {@code sglang:gpu_execution_seconds_total} (SGLang does with
 *                               {@code SGLANG_ENABLE_METRICS_DEVICE_TIMER}); {@code realtime_tokens_total} is always there
 * @param abortOnDisconnect      when an SGLang server aborts a request whose client closed its connection;
 *                               {@link #defaults()} keeps {@link AbortOnDisconnect#IMMEDIATE} (the in-process
 *                               tests time aborts by it), the {@code cluster} command defaults to
 *                               {@link AbortOnDisconnect#SGLANG}, what the real server does
 * @param kvEventsEndpoint       null, or where prefill server i publishes its prefix-cache events in
 *                               SGLang's format (rank r of server i on port + i x dpSize + r; {@code *}: any free port); see {@link KvEventPublisher}
 */
public record SimConfig(String host, double prefillTokensPerSecond, Duration decodeStep, int decodeMaxBatch,
                        Duration kvWait, Duration bootstrapTimeout, String model, int defaultMaxTokens,
                        int eventLoopThreads, int journalLimit, long prefixCacheTokens, Duration vllmAbortTimeout,
                        boolean healthGeneration, Duration healthCheckTimeout, int dpSize, boolean enableMetrics,
                        int contextLength, String adminApiKey, int maxQueuedRequests,
                        AbortOnDisconnect abortOnDisconnect, boolean deviceTimerMetrics, String kvEventsEndpoint,
                        String serverVersion) {

    /**
     * The prefix cache size the {@code cluster} command uses by default (a real server caches
     * prefixes out of the box). {@link #defaults()} keeps the cache off: tests that time the
     * prefill with prompts sharing a long prefix (one tag, then the same filler) rely on every
     * prompt token being computed.
     */
    public static final long DEFAULT_PREFIX_CACHE_TOKENS = 1_000_000;

    /** vLLM's {@code VLLM_NIXL_ABORT_REQUEST_TIMEOUT} default. */
    public static final Duration DEFAULT_VLLM_ABORT_TIMEOUT = Duration.ofSeconds(480);

    /**
     * SGLang's {@code HEALTH_CHECK_TIMEOUT} ({@code SGLANG_HEALTH_CHECK_TIMEOUT}, default 20):
     * sgl-project/sglang python/sglang/srt/entrypoints/http_server.py, module constant.
     */
    public static final Duration DEFAULT_HEALTH_CHECK_TIMEOUT = Duration.ofSeconds(20);

    /** The context length the simulated model reports (a 128k model). */
    public static final int DEFAULT_CONTEXT_LENGTH = 131072;

    public SimConfig {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(decodeStep, "decodeStep");
        Objects.requireNonNull(kvWait, "kvWait");
        Objects.requireNonNull(bootstrapTimeout, "bootstrapTimeout");
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(vllmAbortTimeout, "vllmAbortTimeout");
        check(prefillTokensPerSecond > 0, "prefillTokensPerSecond", prefillTokensPerSecond, "> 0");
        check(!decodeStep.isNegative(), "decodeStep", decodeStep, ">= 0");
        check(decodeMaxBatch > 0, "decodeMaxBatch", decodeMaxBatch, "> 0");
        check(!kvWait.isNegative() && !kvWait.isZero(), "kvWait", kvWait, "> 0");
        check(!bootstrapTimeout.isNegative() && !bootstrapTimeout.isZero(), "bootstrapTimeout", bootstrapTimeout, "> 0");
        check(!model.isBlank(), "model", "\"" + model + "\"", "non-blank");
        check(defaultMaxTokens >= 0, "defaultMaxTokens", defaultMaxTokens, ">= 0");
        check(eventLoopThreads > 0, "eventLoopThreads", eventLoopThreads, "> 0");
        check(journalLimit > 0, "journalLimit", journalLimit, "> 0");
        check(prefixCacheTokens >= 0, "prefixCacheTokens", prefixCacheTokens, ">= 0");
        check(!vllmAbortTimeout.isNegative() && !vllmAbortTimeout.isZero(), "vllmAbortTimeout", vllmAbortTimeout,
                "> 0");
        Objects.requireNonNull(healthCheckTimeout, "healthCheckTimeout");
        check(!healthCheckTimeout.isNegative() && !healthCheckTimeout.isZero(), "healthCheckTimeout",
                healthCheckTimeout, "> 0");
        check(dpSize > 0, "dpSize", dpSize, "> 0");
        check(contextLength > 0, "contextLength", contextLength, "> 0");
        check(adminApiKey == null || !adminApiKey.isEmpty(), "adminApiKey", "\"\"", "null or non-empty");
        check(maxQueuedRequests >= 0, "maxQueuedRequests", maxQueuedRequests, ">= 0 (0: unbounded)");
        Objects.requireNonNull(abortOnDisconnect, "abortOnDisconnect");
        check(kvEventsEndpoint == null || kvEventsEndpoint.startsWith("tcp://"), "kvEventsEndpoint",
                kvEventsEndpoint, "null or tcp://host:port");
    }

    /** The settings before the real-server components were added: those take their defaults. */
    public SimConfig(String host, double prefillTokensPerSecond, Duration decodeStep, int decodeMaxBatch,
                     Duration kvWait, Duration bootstrapTimeout, String model, int defaultMaxTokens,
                     int eventLoopThreads, int journalLimit, long prefixCacheTokens, Duration vllmAbortTimeout) {
        this(host, prefillTokensPerSecond, decodeStep, decodeMaxBatch, kvWait, bootstrapTimeout, model,
                defaultMaxTokens, eventLoopThreads, journalLimit, prefixCacheTokens, vllmAbortTimeout, true,
                DEFAULT_HEALTH_CHECK_TIMEOUT, 1, true, DEFAULT_CONTEXT_LENGTH, null, 0, AbortOnDisconnect.IMMEDIATE,
                false, null, "sim");
    }

    private static void check(boolean ok, String name, Object value, String expected) {
        if (!ok) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: " + expected + ")");
        }
    }

    /**
     * SGLang's and vLLM's defaults where they have one (300 s waits, 480 s abort timeout), otherwise
     * values that keep tests quick; the prefix cache is off (see {@link #DEFAULT_PREFIX_CACHE_TOKENS}).
     */
    public static SimConfig defaults() {
        return new SimConfig("127.0.0.1", 20_000, Duration.ofMillis(20), 64, Duration.ofSeconds(300),
                Duration.ofSeconds(300), "sim-model", 16, 2, 10_000, 0, DEFAULT_VLLM_ABORT_TIMEOUT, true,
                DEFAULT_HEALTH_CHECK_TIMEOUT, 1, true, DEFAULT_CONTEXT_LENGTH, null, 0, AbortOnDisconnect.IMMEDIATE,
                false, null, "sim");
    }

    public SimConfig withHost(String v) {
        return copy(c -> c.host = v);
    }

    public SimConfig withPrefillTokensPerSecond(double v) {
        return copy(c -> c.prefillTokensPerSecond = v);
    }

    public SimConfig withDecodeStep(Duration v) {
        return copy(c -> c.decodeStep = v);
    }

    public SimConfig withDecodeMaxBatch(int v) {
        return copy(c -> c.decodeMaxBatch = v);
    }

    public SimConfig withKvWait(Duration v) {
        return copy(c -> c.kvWait = v);
    }

    public SimConfig withBootstrapTimeout(Duration v) {
        return copy(c -> c.bootstrapTimeout = v);
    }

    public SimConfig withModel(String v) {
        return copy(c -> c.model = v);
    }

    public SimConfig withDefaultMaxTokens(int v) {
        return copy(c -> c.defaultMaxTokens = v);
    }

    public SimConfig withEventLoopThreads(int v) {
        return copy(c -> c.eventLoopThreads = v);
    }

    public SimConfig withJournalLimit(int v) {
        return copy(c -> c.journalLimit = v);
    }

    public SimConfig withPrefixCacheTokens(long v) {
        return copy(c -> c.prefixCacheTokens = v);
    }

    public SimConfig withVllmAbortTimeout(Duration v) {
        return copy(c -> c.vllmAbortTimeout = v);
    }

    public SimConfig withHealthGeneration(boolean v) {
        return copy(c -> c.healthGeneration = v);
    }

    public SimConfig withHealthCheckTimeout(Duration v) {
        return copy(c -> c.healthCheckTimeout = v);
    }

    public SimConfig withDpSize(int v) {
        return copy(c -> c.dpSize = v);
    }

    public SimConfig withEnableMetrics(boolean v) {
        return copy(c -> c.enableMetrics = v);
    }

    public SimConfig withContextLength(int v) {
        return copy(c -> c.contextLength = v);
    }

    public SimConfig withAdminApiKey(String v) {
        return copy(c -> c.adminApiKey = v);
    }

    public SimConfig withMaxQueuedRequests(int v) {
        return copy(c -> c.maxQueuedRequests = v);
    }

    public SimConfig withDeviceTimerMetrics(boolean v) {
        return copy(c -> c.deviceTimerMetrics = v);
    }

    /**
     * Publish each prefill server's prefix-cache events (SGLang's {@code --kv-events-config}
     * {@code {"publisher": "zmq", "endpoint": ...}}): server i's DP rank r binds this
     * endpoint's port + i x dpSize + r, each rank its own stream as in SGLang ({@code *}: any free port); null: off.
     */
    public SimConfig withKvEventsEndpoint(String v) {
        return copy(c -> c.kvEventsEndpoint = v);
    }

    public SimConfig withAbortOnDisconnect(AbortOnDisconnect v) {
        return copy(c -> c.abortOnDisconnect = v);
    }

    /** The {@code version} the server reports (SGLang's {@code /server_info}, vLLM's {@code /version}); "sim" by default. */
    public SimConfig withServerVersion(String v) {
        return copy(c -> c.serverVersion = java.util.Objects.requireNonNull(v, "serverVersion"));
    }

    /** A copy with one change, validated as a new record (one place spells the components out). */
    private SimConfig copy(java.util.function.Consumer<Copy> change) {
        Copy c = new Copy();
        change.accept(c);
        return c.build();
    }

    /** The components of this config, to be changed and built into a new one. */
    private final class Copy {
        String host = SimConfig.this.host;
        double prefillTokensPerSecond = SimConfig.this.prefillTokensPerSecond;
        Duration decodeStep = SimConfig.this.decodeStep;
        int decodeMaxBatch = SimConfig.this.decodeMaxBatch;
        Duration kvWait = SimConfig.this.kvWait;
        Duration bootstrapTimeout = SimConfig.this.bootstrapTimeout;
        String model = SimConfig.this.model;
        int defaultMaxTokens = SimConfig.this.defaultMaxTokens;
        int eventLoopThreads = SimConfig.this.eventLoopThreads;
        int journalLimit = SimConfig.this.journalLimit;
        long prefixCacheTokens = SimConfig.this.prefixCacheTokens;
        Duration vllmAbortTimeout = SimConfig.this.vllmAbortTimeout;
        boolean healthGeneration = SimConfig.this.healthGeneration;
        Duration healthCheckTimeout = SimConfig.this.healthCheckTimeout;
        int dpSize = SimConfig.this.dpSize;
        boolean enableMetrics = SimConfig.this.enableMetrics;
        int contextLength = SimConfig.this.contextLength;
        String adminApiKey = SimConfig.this.adminApiKey;
        int maxQueuedRequests = SimConfig.this.maxQueuedRequests;
        boolean deviceTimerMetrics = SimConfig.this.deviceTimerMetrics;
        String kvEventsEndpoint = SimConfig.this.kvEventsEndpoint;
        AbortOnDisconnect abortOnDisconnect = SimConfig.this.abortOnDisconnect;
        String serverVersion = SimConfig.this.serverVersion;

        SimConfig build() {
            return new SimConfig(host, prefillTokensPerSecond, decodeStep, decodeMaxBatch, kvWait, bootstrapTimeout,
                    model, defaultMaxTokens, eventLoopThreads, journalLimit, prefixCacheTokens, vllmAbortTimeout,
                    healthGeneration, healthCheckTimeout, dpSize, enableMetrics, contextLength, adminApiKey,
                    maxQueuedRequests, abortOnDisconnect, deviceTimerMetrics, kvEventsEndpoint, serverVersion);
        }
    }
}
