package dev.sluice.gateway.server;

import dev.sluice.gateway.cacheview.KvEventSubscription;
import dev.sluice.gateway.cacheview.ModelTokenizer;
import dev.sluice.gateway.cacheview.PromptTokens;
import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.metrics.ModelTokenizerMetrics;
import dev.sluice.gateway.metrics.CacheViewMetrics;
import dev.sluice.gateway.admin.AdminServer;
import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admin.StateView;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.LearnedRatioCounter;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.api.RequestJson;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.discovery.DiscoverySources;
import dev.sluice.gateway.discovery.WorkerDirectory;
import dev.sluice.gateway.coordination.DemandTally;
import dev.sluice.gateway.coordination.FleetLeases;
import dev.sluice.gateway.coordination.RedisLeaseStore;
import dev.sluice.gateway.coordination.ReplicaIdentity;
import dev.sluice.gateway.metrics.CoordinationMetrics;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.config.ConfigWarnings;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.health.HealthChecker;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.health.StallProbes;
import dev.sluice.gateway.health.TelemetryPoller;
import dev.sluice.gateway.health.WorkerIdentityProbe;
import dev.sluice.gateway.metrics.AdmissionMetrics;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.metrics.RoutingMetrics;
import dev.sluice.gateway.pd.AbortSender;
import dev.sluice.gateway.pd.InFlight;
import dev.sluice.gateway.pd.PairProbes;
import dev.sluice.gateway.pd.PdServices;
import dev.sluice.gateway.pd.ServedModel;
import dev.sluice.gateway.routing.FleetRoutedLoad;
import dev.sluice.gateway.routing.RoutingPolicies;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.WorkerRole;
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
import java.util.concurrent.atomic.AtomicReference;
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
    private final WorkerSet workers;
    private final HealthTable health;
    private final UpstreamPool pool;
    private final AbortSender aborts;
    private final LearnedRatioCounter estimator;
    private final PromptTokenCounter counter;
    private final AdmissionController admission;
    private final RoutingMetrics routingMetrics;
    private final Optional<KvEventSubscription> kvEvents;
    private final Optional<CacheViewMetrics> kvMetrics;
    private final Optional<ModelTokenizer> modelTokens; // routing.kv_events.tokenizer: hf
    private final RecentErrors recentErrors;
    private final Set<InFlight> live = ConcurrentHashMap.newKeySet();
    private final AtomicReference<LiveSettings> settings;
    private final FrontServices front;
    private final GatewayDrain drain;
    private final WorkerReconciler reconciler;
    private final WorkerDirectory directory; // the workers' sources: file, dns, kubernetes, admin
    private final LiveReconfiguration reconfiguration;
    private final ClientListener listener = new ClientListener();
    private final FleetLeases leases; // coordination: this replica's share of the fleet's budgets, or null
    private final CoordinationMetrics coordinationMetrics; // or null
    private HealthChecker checker; // replaced when a reload changes the health settings
    private final StallProbes stallProbes; // the panic mode's probes of suspect pairs
    private final PrefillRateState prefillRates;
    private final ReloadEntry reloads;
    private final Tracing tracing; // tracing: (OpenTelemetry), or off
    private boolean started;
    private ClientConnections clients; // the connection cap and the per-connection deadlines
    private ServerTls serverTls; // listen.tls, or null
    private TelemetryPoller telemetry;
    private WorkerIdentityProbe identities;
    private AdminServer adminServer;

    public GatewayServer(GatewayConfig config) {
        this.loops = new ServerLoops(transport, config.http().eventLoopThreads());
        this.workers = new WorkerSet(config.workers());
        this.health = new HealthTable(workers, config.health(), System::nanoTime);
        this.pool = new UpstreamPool(transport, config.timeouts().connect(), config.upstream().maxConnectionsPerWorker(),
                config.upstream().idleTimeout(), FileBackedParts.clientTls(config));
        this.aborts = new AbortSender(pool, metrics, config.timeouts().abort());
        aborts.adminKey(config.workers().adminAuthorization());
        AdmissionConfig ac = config.admission();
        this.estimator = new LearnedRatioCounter(ac.tokenizer().initialBytesPerToken(),
                ac.tokenizer().chatTokensPerMessage());
        this.counter = ac.tokenizer().tokenizerJson().map(path -> FileBackedParts.exactCounter(path, ac, estimator))
                .orElse(estimator);
        AdmissionMetrics admissionMetrics = new AdmissionMetrics(metrics, ac);
        // the prefill workers' own KV events, when configured: the cache view every replica shares
        this.kvEvents = config.routing().kvEvents().map(kv -> KvEventSubscription.of(kv, workers.prefill()));
        this.modelTokens = config.routing().kvEvents().filter(kv -> kv.tokenizer() == RoutingConfig.Tokenizer.HF)
                .flatMap(kv -> ac.tokenizer().tokenizerJson()).map(path -> FileBackedParts.modelTokenizer(path, ac));
        modelTokens.ifPresent(t -> ModelTokenizerMetrics.bind(metrics.registry(), t));
        // coordinated replicas: the share guard of cache_aware judges the fleet's recent load (docs/scale-out.md)
        Optional<FleetRoutedLoad> fleetRouted = config.coordination().map(cc -> new FleetRoutedLoad(
                config.routing().prefill().cacheAware().shareHalfLife().toNanos(), System::nanoTime));
        RoutingPolicy prefillPolicy = RoutingPolicies.create(config.routing(),
                workers.unified() ? WorkerRole.UNIFIED : WorkerRole.PREFILL, kvEvents.map(k -> k.view()), fleetRouted);
        this.kvMetrics = kvEvents.map(k -> new CacheViewMetrics(metrics.registry(), k.view()));
        RoutingPolicy decodePolicy = RoutingPolicies.create(config.routing(),
                workers.unified() ? WorkerRole.UNIFIED : WorkerRole.DECODE);
        this.routingMetrics = new RoutingMetrics(metrics.registry());
        routingMetrics.bind(WorkerRole.PREFILL, prefillPolicy, workers.prefill());
        if (!workers.unified()) {
            routingMetrics.bind(WorkerRole.DECODE, decodePolicy, workers.decode());
        }
        DemandTally tally = config.coordination().isPresent() ? new DemandTally(admissionMetrics) : null;
        this.admission = new AdmissionController(ac, workers, tally != null ? tally : admissionMetrics, System::nanoTime,
                prefillPolicy,
                decodePolicy, routingMetrics::decided, config.telemetry().staleAfter().toNanos());
        admissionMetrics.bind(admission, counter);
        Optional<RedisLeaseStore> redis = config.coordination().map(cc -> new RedisLeaseStore(cc,
                RedisLeaseStore.commandTimeout(cc)));
        this.leases = config.coordination().map(cc -> new FleetLeases(cc, ReplicaIdentity.of(cc),
                this::listenAddress, redis.orElseThrow(), admission,
                workers, tally, fleetRouted.orElseThrow(), loops.control.next(), System::nanoTime)).orElse(null);
        if (leases != null) {
            tally.onUnmet(leases::renewSoon); // a share refusing work asks for more now, not a renewal later
        }
        this.coordinationMetrics = leases == null ? null : new CoordinationMetrics(metrics.registry(), leases::status);
        this.recentErrors = new RecentErrors(config.admin().recentErrors());
        boolean routingUsesPrefix = prefillPolicy.usesPrefix() || decodePolicy.usesPrefix();
        this.settings = new AtomicReference<>(LiveSettings.of(config, routingUsesPrefix,
                modelTokens.map(t -> (PromptTokens) t).orElse(PromptTokens.NONE)));
        this.prefillRates = PrefillRateState.of(this::config, admission, redis, loops.fileIo, background);
        this.drain = new GatewayDrain(admission, live);
        ServedModel servedModel = new ServedModel();
        this.tracing = config.tracing().map(tc -> Tracing.start(tc, metrics.registry())).orElse(Tracing.off());
        PdServices pd = new PdServices(workers, pool, aborts, metrics, admission, counter, health, recentErrors, live,
                servedModel, tracing);
        this.front = new FrontServices(settings::get, new RequestJson(config.http().json()), pd, counter, estimator,
                drain::draining, this::coordination);
        this.reconciler = new WorkerReconciler(workers, health, admission, metrics, routingMetrics, prefillPolicy,
                decodePolicy, pool, loops.upstreamLoops(), config.telemetry(), live);
        this.directory = new WorkerDirectory(workers.unified(), reconciler,
                DiscoverySources.standard(loops.control::next, transport.datagramChannel()));
        this.checker = new HealthChecker(workers, pool, loops.control.next(), health, background);
        // the probes run on the control loop, like the health checks: a busy request loop does not delay them
        io.netty.channel.EventLoop probeLoop = loops.control.next();
        this.stallProbes = new StallProbes(health, new PairProbes(() -> settings.get().exchange(), pool, aborts, metrics,
                probeLoop, servedModel), probeLoop, background,
                (w, outcome) -> metrics.stallProbe(w.role().label(), w.name(), outcome.label()));
        this.reconfiguration = new LiveReconfiguration(settings, routingUsesPrefix, admission, admissionMetrics,
                health, this::restartHealthChecks, directory, aborts);
        this.reloads = new ReloadEntry(reconfiguration, metrics.registry());
        HealthFollowers.attach(health, metrics, live, admission);
        StartupMetrics.bind(metrics, workers, config.telemetry(), pool::openConnections,
                () -> clients == null ? 0 : clients.open());
    }

    public synchronized GatewayServer start() throws InterruptedException {
        GatewayConfig config = config();
        serverTls = FileBackedParts.serverTls(config);
        if (serverTls != null) {
            metrics.bindTls(serverTls::notAfter);
        }
        clients = new ClientConnections(config.http().client(), metrics);
        listener.bind(config, transport, loops.boss, loops.requests, clients, serverTls, metrics, front);
        EventExecutor control = loops.control.next();
        if (serverTls != null) {
            background.every("tls_reload_check", loops.fileIo, config.listen().tls().get().reloadCheck(),
                    () -> metrics.tlsReload(serverTls.reloadIfChanged().name().toLowerCase()));
        }
        checker.start();
        stallProbes.start();
        ControlTasks.start(config, background, control, admission, reconciler, workers, kvEvents, kvMetrics, leases,
                coordinationMetrics);
        started = true;
        prefillRates.start();
        telemetry = new TelemetryPoller(workers, pool, loops.control.next(), config.telemetry(), health, background);
        telemetry.start();
        identities = new WorkerIdentityProbe(workers, pool, loops.control.next(), config.disaggregation(),
                config.telemetry().timeout().multipliedBy(5), background);
        identities.onConfirmed(admission::kick).ranks(new dev.sluice.gateway.routing.RankPlanner(
                config.routing().dpAware(), config.routing().kvEvents().map(k -> k.dpRanks()).orElse(0))).start();
        directory.start(config.workers());
        metrics.bindNetty(loops.requests);
        if (config.admin().enabled()) {
            StateView stateView = new StateView(config, workers, admission, recentErrors, drain::draining, live::size)
                    .coordination(this::coordination);
            kvEvents.ifPresent(k -> stateView.kvView(k.view()));
            stateView.workerSources(w -> directory.source(w.name()).label());
            adminServer = new AdminServer(config.admin(), stateView, metrics);
            adminServer.onWorkers(directory);
            reloads.admin(adminServer, stateView);
            adminServer.start(loops.boss, loops.admin, transport.serverChannel());
            log.info("admin listening address={}:{}", config.admin().host(), adminServer.port());
        }
        log.info("gateway listening address={} transport={} event_loops={} prefill={} decode={} mode={}",
                listener.address(), transport.name(), loops.eventLoops, workers.prefill().size(),
                workers.decode().size(), config.disaggregation().name().toLowerCase());
        for (String w : ConfigWarnings.of(config)) {
            log.warn("config warning {}", w);
        }
        return this;
    }

    /** Reloaded health settings: the active checks start again with them (once the gateway runs). */
    private synchronized void restartHealthChecks() {
        checker.close();
        checker = new HealthChecker(workers, pool, loops.control.next(), health, background);
        if (started) {
            checker.start();
        }
    }

    /**
     * Puts a reloaded configuration's live settings in force ({@link LiveReconfiguration}).
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

    /** The fleet coordination's state, empty without {@code coordination:}. */
    public java.util.Optional<CoordinationStatus> coordination() {
        return leases == null ? java.util.Optional.empty() : java.util.Optional.of(leases.status());
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
        if (leases != null) {
            leases.draining(); // what this replica no longer needs goes back to the fleet now, not after the drain
        }
        drain.drain(grace);
    }

    /** Waits (bounded) until the first health round marked workers of both roles usable. */
    public boolean awaitReady(long timeout, TimeUnit unit) throws InterruptedException {
        return ReadinessReport.await(workers, unit.toNanos(timeout));
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

    public GatewayConfig config() {
        return settings.get().config();
    }

    public GatewayMetrics metrics() {
        return metrics;
    }

    public WorkerSet workers() {
        return workers;
    }

    public HealthTable health() {
        return health;
    }

    public UpstreamPool pool() {
        return pool;
    }

    public AdmissionController admission() {
        return admission;
    }

    /** Requests whose exchange has not ended (for drain and tests). */
    public int liveRequests() {
        return live.size();
    }

    /** Workers a reload removed that still drain (tests, state). */
    public int drainingWorkers() {
        return reconciler.draining();
    }

    /** The parts an exchange uses (benchmarks drive one without a client connection). */
    PdServices pdServices() {
        return front.pd();
    }

    /** What a client connection's handler is given (tests build one on an embedded channel). */
    FrontServices frontServices() {
        return front;
    }

    /** The settings new requests get now. */
    LiveSettings liveSettings() {
        return settings.get();
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
        synchronized (this) {
            checker.close();
        }
        stallProbes.close();
        directory.close();
        if (identities != null) {
            identities.close();
        }
        if (telemetry != null) {
            telemetry.close();
        }
        if (adminServer != null) {
            adminServer.close();
        }
        background.close();
        prefillRates.close();
        if (leases != null) {
            leases.close();
        }
        if (clients != null) {
            clients.close();
        }
        counter.close();
        kvEvents.ifPresent(KvEventSubscription::close);
        modelTokens.ifPresent(ModelTokenizer::close);
        listener.close();
        loops.close();
        tracing.close(); // what is queued goes out (bounded wait)
        metrics.close();
        log.info("gateway stopped");
    }
}
