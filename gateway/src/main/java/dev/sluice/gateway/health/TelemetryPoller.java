package dev.sluice.gateway.health;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.config.GatewayConfig.TelemetryConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerTelemetry;
import dev.sluice.gateway.routing.WorkerTelemetry.Field;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Polls every worker's {@code /get_load} and {@code /metrics} and keeps the result on the
 * {@link Worker} ({@link WorkerTelemetry}). A failed poll keeps the last good numbers but marks
 * the poll failed; numbers older than {@code stale_after} read as unknown (NaN), never as zero
 * load: a worker that cannot be read must not look idle.
 */
public final class TelemetryPoller implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TelemetryPoller.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_BODY = 8 << 20;

    private final WorkerSet workers;
    private final UpstreamPool pool;
    private final EventLoop loop;
    private final TelemetryConfig config;
    private final HealthTable health;
    private ScheduledFuture<?> task;

    public TelemetryPoller(WorkerSet workers, UpstreamPool pool, EventLoop loop, TelemetryConfig config,
                           HealthTable health) {
        this.workers = workers;
        this.pool = pool;
        this.loop = loop;
        this.config = config;
        this.health = health;
    }

    public void start() {
        task = loop.scheduleWithFixedDelay(this::pollAll, 0, config.interval().toMillis(), TimeUnit.MILLISECONDS);
    }

    private void pollAll() {
        for (Worker w : workers.all()) {
            Future<UpstreamFetch.Result> metrics = UpstreamFetch.get(pool, loop, w, "/metrics", config.timeout(), MAX_BODY);
            Future<UpstreamFetch.Result> load = UpstreamFetch.get(pool, loop, w, "/get_load", config.timeout(), MAX_BODY);
            metrics.addListener(f1 -> load.addListener(f2 -> {
                record(w, metrics.getNow(), load.getNow());
                // a decode whose KV cache is nearly full takes no new streams (stale reads as unknown: NaN)
                health.telemetry(w, w.telemetry().value(Field.TOKEN_USAGE, System.nanoTime(),
                        config.staleAfter().toNanos()));
            }));
        }
    }

    private void record(Worker w, UpstreamFetch.Result metrics, UpstreamFetch.Result load) {
        WorkerTelemetry previous = w.telemetry();
        if (!metrics.ok()) {
            if (previous.lastPollOk()) {
                log.warn("worker telemetry unreadable role={} worker={} detail=\"{}\"", w.role().label(), w.name(),
                        metrics.failure() != null ? metrics.failure() : "status " + metrics.status());
            }
            w.telemetry(new WorkerTelemetry(previous.fetchedAtNanos(), false, previous.values()));
            return;
        }
        Map<Field, Double> values = new EnumMap<>(Field.class);
        Map<String, Double> sums = PrometheusText.sums(metrics.text());
        for (Field f : Field.values()) {
            if (f.sglangName() != null && sums.containsKey(f.sglangName())) {
                values.put(f, sums.get(f.sglangName()));
            } else if (f.vllmName() != null && sums.containsKey(f.vllmName())) {
                values.put(f, sums.get(f.vllmName()));
            }
        }
        if (!values.containsKey(Field.TOKEN_USAGE) && sums.containsKey("vllm:gpu_cache_usage_perc")) {
            values.put(Field.TOKEN_USAGE, sums.get("vllm:gpu_cache_usage_perc")); // vLLM before 0.10
        }
        Double hits = sums.get("vllm:prefix_cache_hits_total");
        Double queries = sums.get("vllm:prefix_cache_queries_total");
        if (!values.containsKey(Field.CACHE_HIT_RATE) && hits != null && queries != null && queries > 0) {
            values.put(Field.CACHE_HIT_RATE, hits / queries); // over the worker's life
        }
        if (load.ok()) {
            try {
                double waiting = 0;
                boolean any = false;
                JsonNode ranks = JSON.readTree(load.body());
                for (JsonNode rank : ranks.isArray() ? ranks : JSON.createArrayNode().add(ranks)) {
                    if (rank.path("num_waiting_reqs").isNumber()) {
                        waiting += rank.get("num_waiting_reqs").asDouble();
                        any = true;
                    }
                }
                if (any) {
                    values.put(Field.LOAD_WAITING_REQUESTS, waiting);
                }
            } catch (java.io.IOException e) {
                log.debug("worker /get_load unreadable worker={} cause=\"{}\"", w.name(), e.getMessage());
            }
        }
        if (!previous.lastPollOk() && previous.fetchedAtNanos() != 0) {
            log.info("worker telemetry readable again role={} worker={}", w.role().label(), w.name());
        }
        w.telemetry(new WorkerTelemetry(System.nanoTime(), true, values));
    }

    @Override
    public void close() {
        if (task != null) {
            task.cancel(false);
        }
    }
}
