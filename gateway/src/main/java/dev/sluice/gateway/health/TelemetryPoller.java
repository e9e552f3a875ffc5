package dev.sluice.gateway.health;

import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.background.PeriodicTask;
import dev.sluice.gateway.config.GatewayConfig.TelemetryConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerTelemetry;
import dev.sluice.gateway.routing.WorkerTelemetry.Field;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Polls every worker's {@code /metrics} and its load route ({@code /v1/loads}, or the deprecated
 * {@code /get_load} of older SGLang) and keeps the result on the {@link Worker}
 * ({@link WorkerTelemetry}). The two are read independently: SGLang serves {@code /metrics} only
 * with {@code --enable-metrics}, and a worker without it still reports its queue in its loads; a
 * worker without a load route (vLLM) is not asked again. A failed poll keeps the last good numbers
 * but marks the poll failed; numbers older than {@code stale_after} read as unknown (NaN), never
 * as zero load: a worker that cannot be read must not look idle.
 */
public final class TelemetryPoller implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TelemetryPoller.class);
    private static final int MAX_BODY = 8 << 20;

    private final WorkerSet workers;
    private final UpstreamPool pool;
    private final EventLoop loop;
    private final TelemetryConfig config;
    private final HealthTable health;
    /** Which load route each worker answers (event-loop confined). */
    private final Map<Worker, LoadRoute> loadRoutes = new HashMap<>();
    /** Each worker's last prefill-compute counters, for the rate between two polls (event-loop confined). */
    private final Map<Worker, PrefillCounters> prefillCounters = new HashMap<>();
    private final BackgroundTasks background;
    private PeriodicTask task;

    public TelemetryPoller(WorkerSet workers, UpstreamPool pool, EventLoop loop, TelemetryConfig config,
                           HealthTable health, BackgroundTasks background) {
        this.workers = workers;
        this.background = background;
        this.pool = pool;
        this.loop = loop;
        this.config = config;
        this.health = health;
    }

    public void start() {
        task = background.every("telemetry_poll", loop, Duration.ZERO, config.interval(), this::pollAll);
    }

    private void pollAll() {
        loadRoutes.keySet().retainAll(workers.all());
        prefillCounters.keySet().retainAll(workers.all());
        for (Worker w : workers.all()) {
            Future<UpstreamFetch.Result> metrics = UpstreamFetch.get(pool, loop, w, "/metrics", config.timeout(), MAX_BODY);
            Future<Map<Field, Double>> load = pollLoad(w);
            metrics.addListener(f1 -> load.addListener(f2 -> {
                record(w, metrics.getNow(), load.getNow());
                // a decode whose KV cache is nearly full takes no new streams (stale reads as unknown: NaN)
                health.telemetry(w, w.telemetry().value(Field.TOKEN_USAGE, System.nanoTime(),
                        config.staleAfter().toNanos()));
            }));
        }
    }

    /** The worker's load route's numbers; null when it has none or could not be read. */
    private Future<Map<Field, Double>> pollLoad(Worker w) {
        LoadRoute route = loadRoutes.getOrDefault(w, LoadRoute.V1_LOADS);
        Promise<Map<Field, Double>> out = loop.newPromise();
        if (route == LoadRoute.NONE) {
            return out.setSuccess(null);
        }
        UpstreamFetch.get(pool, loop, w, route.path, config.timeout(), MAX_BODY).addListener(f -> {
            UpstreamFetch.Result r = (UpstreamFetch.Result) f.getNow();
            if (r.failure() == null && r.status() == 404) {
                LoadRoute next = route.fallback();
                loadRoutes.put(w, next);
                log.info("worker has no {} role={} worker={}: {}", route.path, w.role().label(), w.name(),
                        next == LoadRoute.NONE ? "no load route (queue from /metrics only)" : "using " + next.path);
                if (next != LoadRoute.NONE) {
                    pollLoad(w).addListener(g -> out.setSuccess((Map<Field, Double>) g.getNow()));
                    return;
                }
                out.setSuccess(null);
                return;
            }
            loadRoutes.putIfAbsent(w, route);
            out.setSuccess(r.ok() ? LoadReport.read(r.body(), w) : null);
        });
        return out;
    }

    private void record(Worker w, UpstreamFetch.Result metrics, Map<Field, Double> load) {
        WorkerTelemetry previous = w.telemetry();
        boolean metricsOk = metrics.ok();
        if (!metricsOk && previous.lastPollOk()) {
            log.warn("worker metrics unreadable role={} worker={} detail=\"{}\"{}", w.role().label(), w.name(),
                    metrics.failure() != null ? metrics.failure() : "status " + metrics.status(),
                    metrics.status() == 404 ? " (SGLang serves /metrics only with --enable-metrics)" : "");
        }
        if (!metricsOk && load == null) {
            w.telemetry(new WorkerTelemetry(previous.fetchedAtNanos(), false, previous.values()));
            return;
        }
        Map<Field, Double> values = new EnumMap<>(Field.class);
        java.util.List<Double> ranks = previous.rankRequests();
        if (metricsOk) {
            Map<String, PrometheusText.Aggregate> parsed = PrometheusText.read(metrics.text());
            values.putAll(fromMetrics(parsed));
            ranks = PrometheusText.rankRequests(parsed);
            double rate = prefillRate(w, parsed);
            Double before = previous.values().get(Field.PREFILL_COMPUTE_RATE);
            if (!Double.isNaN(rate)) {
                values.put(Field.PREFILL_COMPUTE_RATE, rate);
            } else if (before != null) {
                values.put(Field.PREFILL_COMPUTE_RATE, before); // idle since: the last rate still holds
            }
        }
        if (load != null) {
            values.putAll(load);
        }
        if (!previous.lastPollOk() && previous.fetchedAtNanos() != 0) {
            log.info("worker telemetry readable again role={} worker={}", w.role().label(), w.name());
        }
        w.telemetry(new WorkerTelemetry(System.nanoTime(), metricsOk, values, ranks));
    }

    /** Two polls of the same counters. */
    private record PrefillCounters(double tokens, double seconds) {
    }

    static final String PREFILL_TOKENS = "sglang:realtime_tokens_total{mode=\"prefill_compute\"}";
    static final String CACHED_PROMPT_TOKENS = "sglang:realtime_tokens_total{mode=\"prefill_cache\"}";
    /** Prefill passes' GPU time, whatever the SGLang version calls their category (see PrometheusText). */
    static final String FORWARD_SECONDS = PrometheusText.PREFILL_GPU_SECONDS;
    /** A rate is read only from enough work between two polls to be compute, not noise. */
    private static final double MIN_TOKENS = 2048;
    private static final double MIN_SECONDS = 0.2;

    /**
     * Prefill tokens per second of GPU forward time since the last poll, times the ranks reporting
     * (each DP rank computes in parallel; counted on the token counter, one series per rank, since a
     * rank has one GPU-time series per category); NaN without both counters or without enough work between
     * the polls. A counter that went back (a restart) starts over.
     */
    private double prefillRate(Worker w, Map<String, PrometheusText.Aggregate> m) {
        PrometheusText.Aggregate tokens = m.get(PREFILL_TOKENS);
        PrometheusText.Aggregate seconds = m.get(FORWARD_SECONDS);
        if (tokens == null || seconds == null) {
            prefillCounters.remove(w);
            return Double.NaN;
        }
        PrefillCounters last = prefillCounters.get(w);
        double dTokens = last == null ? 0 : tokens.sum() - last.tokens();
        double dSeconds = last == null ? 0 : seconds.sum() - last.seconds();
        if (last == null || dTokens < 0 || dSeconds < 0) {
            prefillCounters.put(w, new PrefillCounters(tokens.sum(), seconds.sum()));
            return Double.NaN;
        }
        if (dTokens < MIN_TOKENS || dSeconds < MIN_SECONDS) {
            return Double.NaN; // keep the older reading: the work accumulates until there is enough
        }
        prefillCounters.put(w, new PrefillCounters(tokens.sum(), seconds.sum()));
        return dTokens / dSeconds * Math.max(1, tokens.series());
    }

    static Map<Field, Double> fromMetrics(Map<String, PrometheusText.Aggregate> m) {
        Map<Field, Double> values = new EnumMap<>(Field.class);
        for (Field f : Field.values()) {
            for (String name : f.names()) {
                PrometheusText.Aggregate a = m.get(name);
                if (a != null) {
                    values.put(f, f.over() == WorkerTelemetry.Over.MAX ? a.max() : a.sum());
                    break;
                }
            }
        }
        PrometheusText.Aggregate computed = m.get(PREFILL_TOKENS);
        PrometheusText.Aggregate vllmPrompt = m.get("vllm:prompt_tokens_total");
        if (computed != null) {
            PrometheusText.Aggregate cached = m.get(CACHED_PROMPT_TOKENS); // absent until the first hit
            values.put(Field.PROMPT_TOKENS_TOTAL, computed.sum() + (cached == null ? 0 : cached.sum()));
        } else if (vllmPrompt != null) {
            values.put(Field.PROMPT_TOKENS_TOTAL, vllmPrompt.sum());
        }
        PrometheusText.Aggregate hits = m.get("vllm:prefix_cache_hits_total");
        PrometheusText.Aggregate queries = m.get("vllm:prefix_cache_queries_total");
        if (!values.containsKey(Field.CACHE_HIT_RATE) && hits != null && queries != null && queries.sum() > 0) {
            values.put(Field.CACHE_HIT_RATE, hits.sum() / queries.sum()); // over the worker's life
        }
        return values;
    }

    /** The load routes, newest first: SGLang deprecated {@code /get_load} for {@code /v1/loads}; vLLM has neither. */
    private enum LoadRoute {
        V1_LOADS("/v1/loads"), GET_LOAD("/get_load"), NONE(null);

        final String path;

        LoadRoute(String path) {
            this.path = path;
        }

        LoadRoute fallback() {
            return this == V1_LOADS ? GET_LOAD : NONE;
        }
    }

    @Override
    public void close() {
        if (task != null) {
            task.close();
        }
    }
}
