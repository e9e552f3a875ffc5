package dev.sluice.gateway.metrics;

import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.config.GatewayConfig.TelemetryConfig;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.netty.util.internal.PlatformDependent;
import java.util.concurrent.TimeUnit;
import dev.sluice.gateway.routing.WorkerSet;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.prometheus.PrometheusConfig;
import io.micrometer.prometheus.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The gateway's meters, all in one place, exposed at {@code GET /metrics} in the Prometheus
 * text format. Labels are bounded: route, outcome, role, worker (from the config), cause.
 */
public final class GatewayMetrics implements AutoCloseable {
    // the latency histograms carry a sampled request's trace id as an exemplar (OpenMetrics format only)
    private final PrometheusMeterRegistry registry;
    private final GenAiMetrics genAi;
    private final GatewayMetrics root; // this, or the gateway's when this is one pool's view (forPool)
    private final String pool; // null, or the pool whose request meters this view labels
    private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();
    // hot-path meters, looked up by a plain String key (no key building, no registry lookup per call)
    private final ConcurrentMap<String, Timer> firstTokenTimers = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Timer> interTokenTimers = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Timer> durationTimers = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Timer> queueWaitTimers = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Counter[]> requestCounters = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Counter> rejectionCounters = new ConcurrentHashMap<>();
    private final Counter promptTokens;
    private final Counter completionTokens;
    private final JvmGcMetrics gc;
    private final AtomicLong clientBufferedHighWater;
    private final PoolLabels poolLabels;

    public GatewayMetrics() {
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT,
                new io.prometheus.client.CollectorRegistry(true), io.micrometer.core.instrument.Clock.SYSTEM,
                new io.prometheus.client.exemplars.DefaultExemplarSampler(new Exemplars()));
        this.genAi = new GenAiMetrics(registry, null);
        this.root = this;
        this.pool = null;
        this.gc = new JvmGcMetrics();
        this.clientBufferedHighWater = new AtomicLong();
        this.poolLabels = new PoolLabels();
        registry.config().meterFilter(poolLabels); // before any meter: every worker's series gets its pool
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        gc.bindTo(registry);
        Gauge.builder("sluice.client.write.buffer.high.water", clientBufferedHighWater, AtomicLong::get)
                .baseUnit("bytes")
                .description("most bytes ever waiting in one client connection's outbound buffer (backpressure bound)")
                .register(registry);
        promptTokens = counter("sluice.prompt.tokens");
        completionTokens = counter("sluice.completion.tokens");
    }

    /** One model pool's view: the same registry; its request meters ({@link PoolLabels#POOLED}) carry {@code pool}. */
    private GatewayMetrics(GatewayMetrics root, String pool) {
        this.registry = root.registry;
        this.genAi = new GenAiMetrics(registry, pool);
        this.root = root;
        this.pool = pool;
        this.gc = root.gc;
        this.clientBufferedHighWater = root.clientBufferedHighWater;
        this.poolLabels = root.poolLabels;
        promptTokens = counter("sluice.prompt.tokens");
        completionTokens = counter("sluice.completion.tokens");
    }

    /** The meters of {@code pool}'s requests (with {@code pools:}); closing it closes nothing. */
    public GatewayMetrics forPool(String name) {
        return new GatewayMetrics(root, name);
    }

    /** {@code tags}, with this view's pool when {@code name} is a request meter of a pool. */
    private String[] pooled(String name, String... tags) {
        if (pool == null || !PoolLabels.POOLED.contains(name)) {
            return tags;
        }
        String[] t = java.util.Arrays.copyOf(tags, tags.length + 2);
        t[tags.length] = PoolLabels.TAG;
        t[tags.length + 1] = pool;
        return t;
    }

    /** Called after each write to a client; keeps the high-water mark of bytes the gateway buffered. */
    public void clientBuffered(long bytes) {
        clientBufferedHighWater.accumulateAndGet(bytes, Math::max);
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    /** Which pool each worker's meters carry. */
    public PoolLabels poolLabels() {
        return poolLabels;
    }

    /** Worker gauges: up, in flight and telemetry, per role and worker. */
    public void bindWorkers(WorkerSet workers, TelemetryConfig telemetry) {
        WorkerMetrics.bind(registry, workers, telemetry);
    }

    /** The per-worker gauges of a worker a reload added, and its counters at 0. */
    public void bindWorker(dev.sluice.gateway.routing.Worker w, TelemetryConfig telemetry) {
        WorkerMetrics.bind(registry, w, telemetry);
        counter("sluice.kv.transfer.failures", "worker", w.name());
    }

    /** Removes the gauges of a worker a reload removed. */
    public void unbindWorker(dev.sluice.gateway.routing.Worker w) {
        WorkerMetrics.unbind(registry, w);
    }

    /** Netty's own memory and each event loop's backlog: the first things to look at when latency creeps. */
    public void bindNetty(EventLoopGroup loops) {
        NettyMetrics.bind(registry, loops);
    }

    public void firstToken(String route, Duration sinceReceived) {
        timer(firstTokenTimers, "sluice.time.to.first.token", "time from request received to the first token relayed",
                "route", route).record(sinceReceived);
        genAi.firstToken(route, sinceReceived);
    }

    /** OpenTelemetry's GenAI server metrics, beside these. */
    public GenAiMetrics genAi() {
        return genAi;
    }

    /** Per relayed chunk: a map read and a histogram update, nothing allocated. */
    public void interTokenGap(String route, long nanos) {
        timer(interTokenTimers, "sluice.inter.token.latency", "gap between two relayed stream chunks", "route", route)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    public void completionTokens(long tokens) {
        completionTokens.increment(tokens);
    }

    private Timer timer(ConcurrentMap<String, Timer> cache, String name, String description, String tag, String value) {
        Timer t = cache.get(value);
        if (t == null) {
            t = cache.computeIfAbsent(value, v -> Timer.builder(name).description(description)
                    .tags(pooled(name, tag, v)).serviceLevelObjectives(LlmBuckets.LATENCY).register(registry));
        }
        return t;
    }

    public void gauge(String name, String description, Supplier<Number> value) {
        Gauge.builder(name, value).description(description).register(registry);
    }

    public void requestEnded(String route, Outcome outcome, Duration duration) {
        Counter[] byOutcome = requestCounters.get(route);
        if (byOutcome == null) {
            byOutcome = requestCounters.computeIfAbsent(route, r -> new Counter[Outcome.values().length]);
        }
        Counter c = byOutcome[outcome.ordinal()];
        if (c == null) { // registration is idempotent: a race only registers the same meter twice
            c = counter("sluice.requests", "route", route, "outcome", outcome.label());
            byOutcome[outcome.ordinal()] = c;
        }
        c.increment();
        timer(durationTimers, "sluice.request.duration", "time from request received to response ended", "route", route)
                .record(duration);
        genAi.requestDuration(route, duration);
    }

    public void abortCause(String cause) {
        counter("sluice.aborts", "cause", cause).increment();
    }

    /**
     * The gateway's own code failed ({@code where}: {@code request}, while handling a request and
     * its workers' answers; {@code client_handler}, while reading a client's request). Never a
     * worker's fault: a non-zero rate is a bug to report.
     */
    public void internalError(String where) {
        counter("sluice.internal.errors", "where", where).increment();
    }

    /**
     * How a vLLM prefill's KV reached (or did not reach) a decode: {@code transferred} (the decode leg
     * carried the prefill's kv_transfer_params), {@code recomputed} (the prefill answered none: its
     * one token ended the request, and the decode computed the prompt itself), {@code released} (the
     * request ended between the legs; a one-token decode leg freed the prefill's blocks).
     */
    public void vllmHandoff(String result) {
        counter("sluice.vllm.handoffs", "result", result).increment();
    }

    public void abortRequestSent(String role, String result) {
        counter("sluice.abort.requests.sent", "role", role, "result", result).increment();
    }

    public void upstreamError(String role, String kind) {
        counter("sluice.upstream.errors", "role", role, "kind", kind).increment();
    }

    public void promptTokens(long tokens) {
        promptTokens.increment(tokens);
    }

    /** Admission refused a request of {@code pool}'s (null: the one implicit pool), for {@code reason}. */
    public void rejection(String pool, String reason) {
        String key = pool + '\0' + reason;
        Counter c = rejectionCounters.get(key);
        if (c == null) {
            c = rejectionCounters.computeIfAbsent(key, k -> rejectionCounter(pool, reason));
        }
        c.increment();
    }

    /** Exports {@code pool}'s rejection counters at 0, one per reason. */
    public void preRegisterRejections(String pool, java.util.List<String> reasons) {
        reasons.forEach(r -> rejectionCounters.computeIfAbsent(pool + '\0' + r, k -> rejectionCounter(pool, r)));
    }

    /** {@code pool} null: the one implicit pool, no pool label. */
    private Counter rejectionCounter(String pool, String reason) {
        return pool == null ? counter("sluice.rejections", "reason", reason)
                : counter("sluice.rejections", "pool", pool, "reason", reason);
    }

    public void queueWait(String pool, String priority, Duration wait) {
        String key = pool + '\0' + priority;
        Timer t = queueWaitTimers.get(key);
        if (t == null) {
            t = queueWaitTimers.computeIfAbsent(key, k -> Timer.builder("sluice.queue.wait")
                    .description("time a request waited in the gateway's queue before dispatch")
                    .tags(pool == null ? new String[]{"priority", priority} : new String[]{"pool", pool, "priority",
                            priority}).serviceLevelObjectives(LlmBuckets.LATENCY)
                    .register(registry));
        }
        t.record(wait);
    }

    public void retry(String reason) {
        counter("sluice.retries", "reason", reason).increment();
    }

    /**
     * A probe of a pair suspect of a silent stall ended ({@code health.stall_panic}), counted for
     * each suspect worker it tested: {@code result} success, failed or timeout.
     */
    public void stallProbe(String role, String worker, String result) {
        counter("sluice.stall.probes", "role", role, "worker", worker, "result", result).increment();
    }

    /** Exports a stall probe counter at 0 before the first probe. */
    public void preRegisterStallProbe(String role, String worker, String result) {
        counter("sluice.stall.probes", "role", role, "worker", worker, "result", result);
    }

    public void workerEjection(String role, String worker, String reason) {
        counter("sluice.worker.ejections", "role", role, "worker", worker, "reason", reason).increment();
    }

    /** Every {@code result} label of {@code sluice_vllm_handoffs_total}. */
    public static final java.util.List<String> VLLM_HANDOFFS = java.util.List.of("transferred", "recomputed",
            "released");
    /** Every {@code kind} label of {@code sluice_upstream_errors_total}: the connection's kinds and the answer's. */
    public static final java.util.List<String> UPSTREAM_ERROR_KINDS = java.util.List.of("connect", "reset", "malformed",
            "status", "stream_error", "stream_abort", "abort");

    /**
     * Exports at 0, from start-up, every counter whose label values are known in advance, so that
     * a dashboard shows 0 rather than "No data" and {@code rate()}/{@code increase()} see the first
     * event: requests by route and outcome, aborts by cause, upstream errors
     * by role and kind, KV transfer failures per worker.
     */
    public void preRegister(java.util.List<String> routes, java.util.List<String> abortCauses, java.util.List<String> roles,
                            java.util.List<String> workerNames) {
        for (String route : routes) {
            Counter[] byOutcome = requestCounters.computeIfAbsent(route, r -> new Counter[Outcome.values().length]);
            for (Outcome o : Outcome.values()) {
                byOutcome[o.ordinal()] = counter("sluice.requests", "route", route, "outcome", o.label());
            }
        }
        abortCauses.forEach(c -> counter("sluice.aborts", "cause", c));
        for (String where : java.util.List.of("request", "client_handler")) {
            counter("sluice.internal.errors", "where", where);
        }
        VLLM_HANDOFFS.forEach(r -> counter("sluice.vllm.handoffs", "result", r));
        for (String role : roles) {
            UPSTREAM_ERROR_KINDS.forEach(k -> counter("sluice.upstream.errors", "role", role, "kind", k));
        }
        workerNames.forEach(w -> counter("sluice.kv.transfer.failures", "worker", w));
    }

    /** Exports a retry counter at 0 before the first retry. */
    /** The HTTP layer refused a request or connection (limits, framing, timeouts, the connection cap). */
    public void httpRefused(String reason) {
        counter("sluice.http.rejections", "reason", reason).increment();
    }

    /** listen.tls: the served certificate's expiry (unix seconds), and reload and handshake counters at 0. */
    public void bindTls(Supplier<java.time.Instant> notAfter) {
        Gauge.builder("sluice.tls.certificate.expiry", () -> notAfter.get().getEpochSecond()).baseUnit("seconds")
                .description("notAfter of the certificate the client listener serves, as unix time").register(registry);
        for (String r : java.util.List.of("reloaded", "failed")) {
            counter("sluice.tls.reloads", "result", r);
        }
        counter("sluice.tls.handshake.failures");
    }

    /** A reload check's result: unchanged checks are not counted. */
    public void tlsReload(String result) {
        if (!result.equals("unchanged")) {
            counter("sluice.tls.reloads", "result", result).increment();
        }
    }

    public void tlsHandshakeFailed() {
        counter("sluice.tls.handshake.failures").increment();
    }

    public void clientIdleClosed() {
        counter("sluice.client.idle.closes").increment();
    }

    /** Every reason of {@link #httpRefused} at 0 from start-up. */
    public void preRegisterHttpRefusals(java.util.List<String> reasons) {
        reasons.forEach(r -> counter("sluice.http.rejections", "reason", r));
        counter("sluice.client.idle.closes");
    }

    public void preRegisterRetry(String reason) {
        counter("sluice.retries", "reason", reason);
    }

    /** Exports an ejection counter at 0 before the first ejection, so rate() and dashboards see the first one. */
    public void preRegisterEjection(String role, String worker, String reason) {
        counter("sluice.worker.ejections", "role", role, "worker", worker, "reason", reason);
    }

    public void kvTransferFailure(String worker) {
        counter("sluice.kv.transfer.failures", "worker", worker).increment();
    }

    private Counter counter(String name, String... given) {
        String[] tags = pooled(name, given);
        String key = name + String.join("|", tags);
        return counters.computeIfAbsent(key, k -> Counter.builder(name).description(MetricHelp.COUNTERS.get(name)).tags(tags)
                .register(registry));
    }

    public String scrape() {
        return registry.scrape();
    }

    /** The OpenMetrics text format's content type: the format that carries exemplars. */
    public static final String OPENMETRICS = io.prometheus.client.exporter.common.TextFormat.CONTENT_TYPE_OPENMETRICS_100;

    /** In the format {@code accept} asks for: OpenMetrics (with exemplars) if it names it, else 0.0.4. */
    public String scrape(String accept) {
        return acceptsOpenMetrics(accept) ? bucketExemplarsOnly(registry.scrape(OPENMETRICS)) : registry.scrape();
    }

    /** Exemplars on histogram buckets only ({@link OpenMetricsText#bucketExemplarsOnly}). */
    static String bucketExemplarsOnly(String text) {
        return OpenMetricsText.bucketExemplarsOnly(text);
    }

    public static boolean acceptsOpenMetrics(String accept) {
        return accept != null && accept.contains("application/openmetrics-text");
    }

    @Override
    public void close() {
        if (root == this) {
            gc.close();
            registry.close();
        }
    }
}
