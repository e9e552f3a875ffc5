package dev.sluice.gateway.health;

import dev.sluice.gateway.config.GatewayConfig.HealthConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Probes every worker's {@code GET /health} on an interval. A worker becomes usable on its first
 * passing probe and unusable after {@code unhealthy_threshold} failures in a row; a connect
 * failure seen by a request marks it unusable at once, and the next passing probe restores it.
 */
public final class HealthProber implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HealthProber.class);

    private final WorkerSet workers;
    private final UpstreamPool pool;
    private final EventLoop loop;
    private final HealthConfig config;
    private final Map<Worker, Integer> failures = new HashMap<>();
    private ScheduledFuture<?> task;

    public HealthProber(WorkerSet workers, UpstreamPool pool, EventLoop loop, HealthConfig config) {
        this.workers = workers;
        this.pool = pool;
        this.loop = loop;
        this.config = config;
    }

    public void start() {
        task = loop.scheduleWithFixedDelay(this::probeAll, 0, config.interval().toMillis(), TimeUnit.MILLISECONDS);
    }

    private void probeAll() {
        for (Worker w : workers.all()) {
            UpstreamFetch.get(pool, loop, w, "/health", config.timeout(), 64 * 1024).addListener(f -> {
                UpstreamFetch.Result r = (UpstreamFetch.Result) f.getNow();
                result(w, r.failure() == null && r.status() == 200,
                        r.failure() != null ? r.failure() : "status " + r.status());
            });
        }
    }

    private void result(Worker worker, boolean healthy, String detail) {
        boolean was = worker.isUsable();
        if (healthy) {
            failures.put(worker, 0);
            worker.markUsable(true);
            if (!was) {
                log.info("worker usable role={} worker={}", worker.role().label(), worker.name());
            }
            return;
        }
        int n = failures.merge(worker, 1, Integer::sum);
        if (n >= config.unhealthyThreshold() || !was) {
            worker.markUsable(false);
            if (was || n == config.unhealthyThreshold()) {
                log.warn("worker unusable role={} worker={} consecutive_failures={} detail=\"{}\"",
                        worker.role().label(), worker.name(), n, detail);
            }
        }
    }

    @Override
    public void close() {
        if (task != null) {
            task.cancel(false);
        }
    }
}
