package dev.sluice.gateway.health;

import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.background.PeriodicTask;
import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Active checks of every worker: {@code GET /health} every {@code health.interval}, and
 * {@code GET /health_generate} (a real one-token generation, which catches a stuck scheduler that
 * {@code /health} misses) every {@code health.generate_interval}, plus at once for a worker a
 * request suspects of stalling. At most one check of each kind in flight per worker. Results go
 * to the {@link HealthTable}. A worker whose {@code /health_generate} failed is re-checked at the
 * {@code /health} pace until it passes, so it comes back in seconds once it recovers. Runs on one
 * event loop, so its bookkeeping needs no locks.
 */
public final class HealthChecker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HealthChecker.class);
    private static final int MAX_BODY = 64 * 1024;

    private final WorkerSet workers;
    private final UpstreamPool pool;
    private final EventLoop loop;
    private final HealthTable table;
    private final HealthConfig config;
    private final Set<Worker> healthInFlight = new HashSet<>();
    private final Set<Worker> generateInFlight = new HashSet<>();
    /** Workers a request suspected of stalling: the next /health_generate result confirms or clears it. */
    private final Set<Worker> suspected = new HashSet<>();
    /** Workers whose last /health_generate failed: checked at the faster /health pace until it passes (quick recovery). */
    private final Set<Worker> generateFailing = new HashSet<>();
    private final BackgroundTasks background;
    private final List<PeriodicTask> tasks = new ArrayList<>();
    /** Workers that answered /health_generate with 404 (vLLM has no such route): checked with /health only. */
    private final Set<Worker> noGenerateRoute = new HashSet<>();
    /** Workers given at least one /health check (loop-confined). */
    private final Set<Worker> checked = new HashSet<>();
    private static final Duration NEW_WORKER_PACE = Duration.ofMillis(100);

    public HealthChecker(WorkerSet workers, UpstreamPool pool, EventLoop loop, HealthTable table,
                         BackgroundTasks background) {
        this.workers = workers;
        this.background = background;
        this.pool = pool;
        this.loop = loop;
        this.table = table;
        this.config = table.config();
    }

    public void start() {
        tasks.add(background.every("health_check", loop, Duration.ZERO, config.interval(), () -> {
            workers.all().forEach(this::checkHealth);
            List.copyOf(generateFailing).forEach(this::checkGenerate);
        }));
        // a worker just added (discovery, the admin API, a reload) is checked at once, not at the next round:
        // it takes traffic once this first check passes
        tasks.add(background.every("health_check_new", loop, NEW_WORKER_PACE, () -> {
            List<Worker> all = workers.all();
            checked.retainAll(all);
            for (Worker w : all) {
                if (!checked.contains(w)) {
                    checkHealth(w);
                }
            }
        }));
        Duration g = config.generateInterval();
        if (!g.isZero()) {
            tasks.add(background.every("health_generate", loop, g, () -> workers.all().forEach(this::checkGenerate)));
        }
        tasks.add(background.every("health_tick", loop, Duration.ofMillis(50), table::tick));
        table.onSuspicion(w -> loop.execute(() -> {
            suspected.add(w);
            checkGenerate(w);
        }));
    }

    private void checkHealth(Worker w) {
        checked.add(w);
        check(w, "/health", config.timeout(), FailureKind.ACTIVE_HEALTH, healthInFlight);
    }

    private void checkGenerate(Worker w) {
        if (noGenerateRoute.contains(w)) {
            return;
        }
        check(w, "/health_generate", config.generateTimeout(), FailureKind.ACTIVE_GENERATE, generateInFlight);
    }

    private void check(Worker w, String path, Duration timeout, FailureKind kind, Set<Worker> inFlight) {
        if (!inFlight.add(w)) {
            return; // the previous one has not answered yet; its timeout will
        }
        UpstreamFetch.get(pool, loop, w, path, timeout, MAX_BODY).addListener(f -> {
            inFlight.remove(w);
            UpstreamFetch.Result r = (UpstreamFetch.Result) f.getNow();
            if (kind == FailureKind.ACTIVE_GENERATE && r.failure() == null && r.status() == 404) {
                // vLLM serves no /health_generate: not a failure, just a worker this check cannot see into
                if (noGenerateRoute.add(w)) {
                    log.info("worker has no /health_generate role={} worker={}: /health only", w.role().label(),
                            w.name());
                }
                suspected.remove(w);
                return;
            }
            boolean ok = r.failure() == null && r.status() == 200;
            boolean confirming = kind == FailureKind.ACTIVE_GENERATE && suspected.remove(w);
            if (kind == FailureKind.ACTIVE_GENERATE) {
                if (ok) {
                    generateFailing.remove(w);
                } else {
                    generateFailing.add(w);
                }
            }
            table.activeResult(w, kind, ok, r.failure() != null ? r.failure() : "status " + r.status(), confirming);
        });
    }

    @Override
    public void close() {
        tasks.forEach(PeriodicTask::close);
    }
}
