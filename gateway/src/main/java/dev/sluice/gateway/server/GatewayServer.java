package dev.sluice.gateway.server;

import dev.sluice.gateway.admin.AdminServer;
import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admin.StateView;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.api.RequestJson;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.discovery.WorkerDirectory;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.config.ConfigWarnings;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.PoolsConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.pd.InFlight;
import dev.sluice.gateway.pd.PdServices;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.tracing.Tracing;
import dev.sluice.gateway.tls.ServerTls;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.util.concurrent.EventExecutor;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running gateway's composition root: builds every part once and wires them (the constructor),
 * starts what runs (the client listener, health checks, telemetry, the admin listener: {@link
 * #start}) and stops it all ({@link #close}). Requests never reach through it: the client handler
 * gets its few dependencies ({@link FrontServices}); reload ({@link LiveReconfiguration},
 * {@link ConfigReload}) and drain ({@link GatewayDrain}) are classes of their own. Threads: the
 * request event loops ({@code sluice-io}), one control loop ({@code sluice-control}: admission's
 * expiry sweep, health, telemetry, coordination), one admin loop ({@code sluice-admin}), one thread
 * for file IO ({@code sluice-file-io}), one accept loop; every periodic task is a
 * {@link dev.sluice.gateway.background.PeriodicTask} (docs/architecture.md, "Threads").
 */
public final class GatewayServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);

    private final Transport transport = Transport.best();
    private final GatewayMetrics metrics = new GatewayMetrics();
    private final BackgroundTasks background = new BackgroundTasks(metrics.registry()); // each counts its failures
    private final ServerLoops loops;
    private final UpstreamPool pool;
    private final RecentErrors recentErrors;
    private final Set<InFlight> live = ConcurrentHashMap.newKeySet();
    private final Pools pools; // the model pools: each its workers, health, routing, admission (ModelPool)
    private final PoolsReconfiguration reconfiguration;
    private final FrontServices front;
    private final GatewayDrain drain;
    private final ClientListener listener = new ClientListener();
    private final ReloadEntry reloads;
    private final Tracing tracing; // tracing: (OpenTelemetry), or off
    private ClientConnections clients; // the connection cap and the per-connection deadlines
    private ServerTls serverTls; // listen.tls, or null
    private AdminServer adminServer;

    public GatewayServer(GatewayConfig config) {
        this.loops = new ServerLoops(transport, config.http().eventLoopThreads());
        this.pool = new UpstreamPool(transport, config.timeouts().connect(), config.upstream().maxConnectionsPerWorker(),
                config.upstream().idleTimeout(), FileBackedParts.clientTls(config));
        this.recentErrors = new RecentErrors(config.admin().recentErrors());
        this.tracing = Tracing.live(config.tracing(), metrics.registry()); // a reload may turn it on, off or change it
        PoolsConfig pc = config.pools();
        if (pc.explicit()) {
            metrics.poolLabels().enable(pc.defaultPool()); // every pool's and worker's series get a pool label
        }
        PoolServices shared = new PoolServices(transport, loops, pool, metrics, recentErrors, live, tracing,
                this::listenAddress, pc.defaultPool());
        Function<PoolsConfig.Pool, ModelPool> build = p -> new ModelPool(p.name(), p.models(), p.view(), shared);
        List<ModelPool> running = new ArrayList<>();
        if (pc.explicit()) {
            pc.pools().forEach(p -> running.add(build.apply(p)));
        } else {
            running.add(new ModelPool(pc.defaultPool(), List.of(), config, shared));
        }
        this.pools = new Pools(running, running.stream().filter(p -> p.name.equals(pc.defaultPool())).findFirst()
                .orElseThrow(), pc.explicit());
        this.reconfiguration = new PoolsReconfiguration(pools, config, build, shared);
        this.drain = new GatewayDrain(() -> pools.all().stream().map(p -> p.admission).toList(), live);
        this.front = new FrontServices(() -> pools.defaultPool().settings(), new RequestJson(config.http().json()),
                pools, drain::draining, this::coordination, metrics);
        this.reloads = new ReloadEntry(reconfiguration, metrics.registry());
        StartupMetrics.bind(metrics, pool::openConnections, () -> clients == null ? 0 : clients.open());
    }

    public synchronized GatewayServer start() throws InterruptedException {
        GatewayConfig config = config();
        serverTls = FileBackedParts.serverTls(config);
        if (serverTls != null) {
            metrics.bindTls(serverTls::notAfter);
        }
        clients = new ClientConnections(config.http().client(), metrics);
        listener.bind(config, transport, loops.boss, loops.requests, clients, serverTls, metrics, front);
        if (serverTls != null) {
            background.every("tls_reload_check", loops.fileIo, config.listen().tls().get().reloadCheck(),
                    () -> metrics.tlsReload(serverTls.reloadIfChanged().name().toLowerCase()));
        }
        reconfiguration.start(); // every pool; from now on a pool a reload adds starts as it is added
        metrics.bindNetty(loops.requests);
        if (config.admin().enabled()) {
            ModelPool d = pools.defaultPool();
            StateView stateView = new StateView(config, d.workers, d.admission, recentErrors, drain::draining,
                    live::size).coordination(this::coordination);
            d.kvEvents.ifPresent(k -> stateView.kvView(k.view()));
            stateView.workerSources(w -> pools.all().stream().filter(p -> p.owns(w)).findFirst()
                    .map(p -> p.directory.source(w.name()).label()).orElse("file"));
            stateView.pools(() -> PoolsView.json(pools));
            if (pools.explicit()) {
                stateView.ready(() -> ReadinessReport.answer(pools, drain.draining(), coordination(), false).ready());
            }
            adminServer = new AdminServer(config.admin(), stateView, metrics);
            // the pools serving now: a pool a reload added takes workers, a removed one no longer does
            adminServer.onWorkers(() -> pools.all().stream().collect(Collectors.toMap(p -> p.name, p -> p.directory)),
                    pools.defaultPool().name);
            reloads.admin(adminServer, stateView);
            adminServer.start(loops.boss, loops.admin, transport.serverChannel());
            log.info("admin listening address={}:{}", config.admin().host(), adminServer.port());
        }
        for (ModelPool p : pools.all()) {
            log.info("pool ready pool={} models={} mode={} prefill={} decode={}", p.name,
                    p.models.isEmpty() ? "any" : String.join(",", p.models),
                    p.config().disaggregation().name().toLowerCase(), p.workers.prefill().size(),
                    p.workers.decode().size());
        }
        log.info("gateway listening address={} transport={} event_loops={} pools={} prefill={} decode={} mode={}",
                listener.address(), transport.name(), loops.eventLoops, pools.all().size(),
                pools.defaultPool().workers.prefill().size(), pools.defaultPool().workers.decode().size(),
                config.disaggregation().name().toLowerCase());
        for (String w : ConfigWarnings.of(config)) {
            log.warn("config warning {}", w);
        }
        return this;
    }

    /**
     * Puts a reloaded configuration's live settings in force, in every pool ({@link PoolsReconfiguration}).
     *
     * @throws IllegalArgumentException when a change cannot be applied live (nothing was changed)
     */
    public AppliedChanges apply(GatewayConfig next) {
        return reconfiguration.apply(next);
    }

    /** host:port of the client listener, as peers see it in /admin/state. */
    private String listenAddress() {
        java.net.InetSocketAddress a = listener.address();
        return a.getHostString() + ":" + a.getPort();
    }

    /**
     * The fleet coordination's state of the default pool, empty without {@code coordination:}; serving only
     * while every pool's is (a replica serves on correct budgets or not at all).
     */
    public java.util.Optional<CoordinationStatus> coordination() {
        java.util.Optional<CoordinationStatus> d = pools.defaultPool().coordination();
        boolean allServing = pools.all().stream().allMatch(p -> p.coordination().map(CoordinationStatus::serving)
                .orElse(true));
        return allServing ? d : d.map(CoordinationStatus::notServing);
    }

    /** Enables live reload from {@code file}: SIGHUP, a watch on the file, {@code POST /admin/reload}. */
    public ConfigReload reloadFrom(Path file, boolean sighup) throws IOException {
        return reloadFrom(file, ConfigOverrides.none(), sighup);
    }

    /** Reload from {@code file} only when asked ({@link ConfigReload#reload}): no watch, no signal (tests). */
    public ConfigReload reloader(Path file) {
        return reloads.reloader(file);
    }

    /** ... with the start-up's overrides (environment, {@code --set}) applied to every reload too. */
    public ConfigReload reloadFrom(Path file, ConfigOverrides overrides, boolean sighup) throws IOException {
        return reloads.reloadFrom(file, overrides, sighup);
    }

    /** Graceful drain ({@link GatewayDrain}); blocks the calling (shutdown) thread, never a loop. */
    public void drain(Duration grace) throws InterruptedException {
        pools.all().forEach(ModelPool::draining); // what this replica no longer needs goes back to the fleet now
        drain.drain(grace);
    }

    /**
     * Waits (bounded) until the first health round marked workers of both roles usable, and the calibration
     * of the prefill rates at start settled, in every pool.
     */
    public boolean awaitReady(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        for (ModelPool p : pools.all()) {
            if (!ReadinessReport.await(p, Math.max(0, deadline - System.nanoTime()))) {
                return false;
            }
        }
        return true;
    }

    // ---- for the CLI, the admin views and tests ----

    /** The bound port (useful with {@code listen.port: 0}). */
    public int port() {
        return listener.address().getPort();
    }

    /** The admin listener's bound port, or -1 when disabled. */
    public int adminPort() {
        return adminServer == null ? -1 : adminServer.port();
    }

    /** The running configuration: without {@code pools:}, as written; with them, the default pool's view. */
    public GatewayConfig config() {
        return pools.defaultPool().config();
    }

    public GatewayMetrics metrics() {
        return metrics;
    }

    /** The default pool's workers (the gateway's, without {@code pools:}). */
    public WorkerSet workers() {
        return pools.defaultPool().workers;
    }

    public HealthTable health() {
        return pools.defaultPool().health;
    }

    /** The admission of the pool named {@code name} (tests, benchmarks). */
    public java.util.Optional<AdmissionController> admission(String name) {
        return pools.named(name).map(p -> p.admission);
    }

    /** The names of the running pools, in configuration order. */
    public java.util.List<String> poolNames() {
        return pools.all().stream().map(p -> p.name).toList();
    }

    public UpstreamPool pool() {
        return pool;
    }

    /** The default pool's admission (the gateway's, without {@code pools:}). */
    public AdmissionController admission() {
        return pools.defaultPool().admission;
    }

    /** Pools a reload removed whose requests still drain (tests, state). */
    public List<String> retiringPools() {
        return reconfiguration.retiring();
    }

    /** Requests whose exchange has not ended (for drain and tests). */
    public int liveRequests() {
        return live.size();
    }

    /** Workers a reload removed that still drain (tests, state). */
    public int drainingWorkers() {
        return pools.all().stream().mapToInt(p -> p.reconciler.draining()).sum();
    }

    /** The parts an exchange uses (benchmarks drive one without a client connection). */
    PdServices pdServices() {
        return pools.defaultPool().pd;
    }

    /** What a client connection's handler is given (tests build one on an embedded channel). */
    FrontServices frontServices() {
        return front;
    }

    /** The settings new requests get now. */
    LiveSettings liveSettings() {
        return pools.defaultPool().settings();
    }

    /** The loop that runs admission's expiry sweep (tests block it to show what does not wait on it). */
    EventExecutor controlLoop() {
        return loops.control.next();
    }

    /** Where the periodic tasks are started (tests add one that fails). */
    BackgroundTasks backgroundTasks() {
        return background;
    }

    @Override
    public void close() {
        reloads.close();
        reconfiguration.close(); // pools a reload removed that still drain: stopped and closed now
        pools.all().forEach(ModelPool::close);
        if (adminServer != null) {
            adminServer.close();
        }
        background.close();
        pools.all().forEach(ModelPool::saveRatesAtStop);
        loops.closeFileIo(); // waits for every pool's last save of its rates
        pools.all().forEach(ModelPool::closeAfterTasks); // the leases' store closes after those saves
        if (clients != null) {
            clients.close();
        }
        listener.close();
        loops.close();
        tracing.close(); // what is queued goes out (bounded wait)
        metrics.close();
        log.info("gateway stopped");
    }
}
