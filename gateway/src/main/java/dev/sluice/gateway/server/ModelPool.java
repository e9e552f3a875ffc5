package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.LearnedRatioCounter;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.cacheview.KvEventSubscription;
import dev.sluice.gateway.cacheview.ModelTokenizer;
import dev.sluice.gateway.cacheview.PromptTokens;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.coordination.DemandTally;
import dev.sluice.gateway.coordination.FleetLeases;
import dev.sluice.gateway.coordination.RedisLeaseStore;
import dev.sluice.gateway.coordination.ReplicaIdentity;
import dev.sluice.gateway.discovery.DiscoverySources;
import dev.sluice.gateway.discovery.WorkerDirectory;
import dev.sluice.gateway.health.HealthChecker;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.health.StallProbes;
import dev.sluice.gateway.health.TelemetryPoller;
import dev.sluice.gateway.health.WorkerIdentityProbe;
import dev.sluice.gateway.metrics.AdmissionMetrics;
import dev.sluice.gateway.metrics.CacheViewMetrics;
import dev.sluice.gateway.metrics.CoordinationMetrics;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.metrics.ModelTokenizerMetrics;
import dev.sluice.gateway.metrics.RoutingMetrics;
import dev.sluice.gateway.pd.AbortSender;
import dev.sluice.gateway.pd.OwnRequestServices;
import dev.sluice.gateway.pd.PairProbes;
import dev.sluice.gateway.pd.PdServices;
import dev.sluice.gateway.pd.PrefillCalibrations;
import dev.sluice.gateway.pd.ServedModel;
import dev.sluice.gateway.routing.FleetRoutedLoad;
import dev.sluice.gateway.routing.RoutingPolicies;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import io.netty.channel.EventLoop;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One model pool running: its workers and their health, routing, admission (its own queue, token
 * budget and windows: one pool's overload never refuses another's requests), its fleet leases,
 * its worker sources, the probes and polls of its workers, and the live settings its requests run
 * with. Everything shared by the pools (the loops, the connections to the workers, the metrics
 * registry, tracing, the set of requests in flight) comes in {@link PoolServices}. Without
 * {@code pools:} the gateway runs one of these, named {@code default}.
 */
final class ModelPool implements AutoCloseable {
    final String name;
    final List<String> models;
    final WorkerSet workers;
    final HealthTable health;
    final AdmissionController admission;
    final PdServices pd;
    final WorkerReconciler reconciler;
    final WorkerDirectory directory;
    final LiveReconfiguration reconfiguration;
    final Optional<KvEventSubscription> kvEvents;
    final PrefillRateState prefillRates;
    private final PoolServices shared;
    /** This pool's periodic tasks, every one: stopped together when the pool closes (a reload removed it). */
    private final BackgroundTasks tasks;
    /** This pool's requests in flight (each also in the gateway's set). */
    final PoolInFlight inFlight;
    private final AbortSender aborts;
    private final LearnedRatioCounter estimator;
    private final PromptTokenCounter counter;
    private final Optional<CacheViewMetrics> kvMetrics;
    private final Optional<ModelTokenizer> modelTokens; // routing.kv_events.tokenizer: hf
    private final AtomicReference<LiveSettings> settings;
    private final FleetLeases leases; // coordination: this replica's share of the pool's budgets, or null
    private final CoordinationMetrics coordinationMetrics; // or null
    private final StallProbes stallProbes; // the panic mode's probes of suspect pairs
    /** The gateway's own measurement of each prefill worker's rate as it joins (readiness waits for it at start). */
    final PrefillCalibrations calibrations;
    private HealthChecker checker; // replaced when a reload changes the health settings
    private boolean started;
    private TelemetryPoller telemetry;
    private WorkerIdentityProbe identities;

    ModelPool(String name, List<String> models, GatewayConfig config, PoolServices shared) {
        this.name = name;
        this.models = List.copyOf(models);
        this.shared = shared;
        this.tasks = new BackgroundTasks(shared.metrics().registry());
        this.inFlight = new PoolInFlight(shared.live());
        this.workers = new WorkerSet(config.workers());
        workers.all().forEach(w -> shared.metrics().poolLabels().assign(w.name(), name));
        boolean labelled = shared.metrics().poolLabels().on(); // pools: configured
        // this pool's requests are counted with its pool label (with pools: only)
        GatewayMetrics metrics = labelled ? shared.metrics().forPool(name) : shared.metrics();
        this.health = new HealthTable(workers, config.health(), System::nanoTime);
        this.aborts = new AbortSender(shared.upstream(), metrics, config.timeouts().abort());
        aborts.adminKey(config.workers().adminAuthorization());
        AdmissionConfig ac = config.admission();
        this.estimator = new LearnedRatioCounter(ac.tokenizer().initialBytesPerToken(),
                ac.tokenizer().chatTokensPerMessage());
        this.counter = ac.tokenizer().tokenizerJson().map(path -> FileBackedParts.exactCounter(path, ac, estimator))
                .orElse(estimator);
        String label = labelled ? name : null; // the pool label, with pools: only
        AdmissionMetrics admissionMetrics = new AdmissionMetrics(shared.metrics(), ac, label);
        // the prefill workers' own KV events, when configured: the cache view every replica shares
        this.kvEvents = config.routing().kvEvents().map(kv -> KvEventSubscription.of(kv, workers.prefill()));
        this.modelTokens = config.routing().kvEvents().filter(kv -> kv.tokenizer() == RoutingConfig.Tokenizer.HF)
                .flatMap(kv -> ac.tokenizer().tokenizerJson()).map(path -> FileBackedParts.modelTokenizer(path, ac));
        modelTokens.ifPresent(t -> ModelTokenizerMetrics.bind(shared.metrics().registry(), t));
        // coordinated replicas: the share guard of cache_aware judges the fleet's recent load (docs/scale-out.md)
        Optional<FleetRoutedLoad> fleetRouted = config.coordination().map(cc -> new FleetRoutedLoad(
                config.routing().prefill().cacheAware().shareHalfLife().toNanos(), System::nanoTime));
        RoutingPolicy prefillPolicy = RoutingPolicies.create(config.routing(),
                workers.unified() ? WorkerRole.UNIFIED : WorkerRole.PREFILL, kvEvents.map(k -> k.view()), fleetRouted);
        this.kvMetrics = kvEvents.map(k -> new CacheViewMetrics(shared.metrics().registry(), k.view()));
        RoutingPolicy decodePolicy = RoutingPolicies.create(config.routing(),
                workers.unified() ? WorkerRole.UNIFIED : WorkerRole.DECODE);
        RoutingMetrics routingMetrics = new RoutingMetrics(shared.metrics().registry(), label);
        routingMetrics.bind(WorkerRole.PREFILL, prefillPolicy, workers.prefill());
        if (!workers.unified()) {
            routingMetrics.bind(WorkerRole.DECODE, decodePolicy, workers.decode());
        }
        DemandTally tally = config.coordination().isPresent() ? new DemandTally(admissionMetrics) : null;
        this.admission = new AdmissionController(ac, workers, tally != null ? tally : admissionMetrics, System::nanoTime,
                prefillPolicy, decodePolicy, routingMetrics::decided, config.telemetry().staleAfter().toNanos());
        admissionMetrics.bind(admission, counter);
        Optional<RedisLeaseStore> redis = config.coordination().map(cc -> new RedisLeaseStore(cc,
                RedisLeaseStore.commandTimeout(cc)));
        this.leases = config.coordination().map(cc -> new FleetLeases(cc, ReplicaIdentity.of(cc),
                shared.listenAddress(), redis.orElseThrow(), admission, workers, tally, fleetRouted.orElseThrow(),
                shared.loops().control.next(), System::nanoTime)).orElse(null);
        if (leases != null) {
            tally.onUnmet(leases::renewSoon); // a share refusing work asks for more now, not a renewal later
        }
        this.coordinationMetrics = leases == null ? null
                : new CoordinationMetrics(shared.metrics().registry(), leases::status);
        boolean routingUsesPrefix = prefillPolicy.usesPrefix() || decodePolicy.usesPrefix();
        this.settings = new AtomicReference<>(LiveSettings.of(config, routingUsesPrefix,
                modelTokens.map(t -> (PromptTokens) t).orElse(PromptTokens.NONE)));
        this.prefillRates = PrefillRateState.of(this::config, admission, redis, shared.loops().fileIo,
                tasks, shared.defaultPool().equals(name) ? null : name);
        ServedModel servedModel = new ServedModel();
        this.pd = new PdServices(workers, shared.upstream(), aborts, metrics, admission, counter, health,
                shared.recentErrors(), inFlight, servedModel, shared.tracing());
        this.reconciler = new WorkerReconciler(workers, health, admission, metrics, routingMetrics,
                prefillPolicy, decodePolicy, shared.upstream(), shared.loops().upstreamLoops(), config.telemetry(),
                inFlight, name);
        this.directory = new WorkerDirectory(workers.unified(), reconciler,
                DiscoverySources.standard(shared.loops().control::next, shared.transport().datagramChannel()));
        this.checker = new HealthChecker(workers, shared.upstream(), shared.loops().control.next(), health,
                tasks);
        // the probes run on the control loop, like the health checks: a busy request loop does not delay them
        EventLoop probeLoop = shared.loops().control.next();
        OwnRequestServices own = new OwnRequestServices(() -> settings.get().exchange(), shared.upstream(), aborts,
                metrics, probeLoop, servedModel);
        this.stallProbes = new StallProbes(health, new PairProbes(own), probeLoop, tasks,
                (w, outcome) -> metrics.stallProbe(w.role().label(), w.name(), outcome.label()));
        // on the control loop too: a calibration's timing must not wait behind client requests' work
        this.calibrations = new PrefillCalibrations(own.on(shared.loops().control.next()), workers,
                admission.calibration(), () -> config().admission().prefillRate().calibration(),
                counter::bytesPerToken, tasks);
        this.reconfiguration = new LiveReconfiguration(settings, routingUsesPrefix, admission, admissionMetrics,
                health, this::restartHealthChecks, directory, aborts);
        HealthFollowers.attach(health, metrics, inFlight, admission);
        StartupMetrics.preRegister(metrics, workers);
        metrics.bindWorkers(workers, config.telemetry());
    }

    /** Starts what runs: health checks, probes, the control tasks, leases, telemetry, identity checks, discovery. */
    synchronized void start() throws InterruptedException {
        GatewayConfig config = config();
        checker.start();
        stallProbes.start();
        ControlTasks.start(config, tasks, shared.loops().control.next(), admission, reconciler,
                workers, kvEvents, kvMetrics, leases, coordinationMetrics);
        started = true;
        prefillRates.start();
        calibrations.start(); // after the kept rates are in: a worker with one needs none under auto
        telemetry = new TelemetryPoller(workers, shared.upstream(), shared.loops().control.next(), config.telemetry(),
                health, tasks);
        telemetry.start();
        identities = new WorkerIdentityProbe(workers, shared.upstream(), shared.loops().control.next(),
                config.disaggregation(), config.telemetry().timeout().multipliedBy(5), tasks);
        identities.onConfirmed(admission::kick).decodeWindow(() -> config().admission().decodeMaxInflightStreams())
                .ranks(new dev.sluice.gateway.routing.RankPlanner(
                config.routing().dpAware(), config.routing().kvEvents().map(k -> k.dpRanks()).orElse(0))).start();
        directory.start(config.workers());
    }

    /** Reloaded health settings: the active checks start again with them (once the pool runs). */
    private synchronized void restartHealthChecks() {
        checker.close();
        checker = new HealthChecker(workers, shared.upstream(), shared.loops().control.next(), health,
                tasks);
        if (started) {
            checker.start();
        }
    }

    private volatile boolean firstVerdicts; // sticky: readiness waits for the first verdicts at start-up only

    /**
     * Whether every worker had its first health verdict at some point: {@code now} says whether they all have
     * one now, and the first true is kept (a worker added later, by discovery or the worker API, does not take
     * the replica out of rotation while its first check runs).
     */
    boolean firstVerdicts(boolean now) {
        if (now && !firstVerdicts) {
            firstVerdicts = true;
        }
        return firstVerdicts;
    }

    /** The configuration as this pool sees it now. */
    GatewayConfig config() {
        return settings.get().config();
    }

    LiveSettings settings() {
        return settings.get();
    }

    PromptTokenCounter counter() {
        return counter;
    }

    LearnedRatioCounter estimator() {
        return estimator;
    }

    /** The fleet coordination's state of this pool, empty without {@code coordination:}. */
    Optional<CoordinationStatus> coordination() {
        return leases == null ? Optional.empty() : Optional.of(leases.status());
    }

    /** On drain: what this replica no longer needs of the pool's budgets goes back to the fleet now. */
    void draining() {
        if (leases != null) {
            leases.draining();
        }
    }

    /**
     * A reload removed this pool: from now on a request that still resolved it (its model looked up in the
     * instant before the reload) is refused as soon as it has joined the pool's in-flight set. The flag is
     * written before the retirement reads that set, and a request joins the set before it reads the flag, so
     * either the retirement sees the request and waits for it, or the request sees the flag and leaves.
     */
    void retire() {
        retired = true;
    }

    boolean retired() {
        return retired;
    }

    private volatile boolean retired;

    /** Whether {@code w} is one of this pool's workers. */
    boolean owns(Worker w) {
        return workers.all().contains(w);
    }

    /** Readiness does not wait for the first verdicts of a pool a reload added (as for a worker added later). */
    void addedLive() {
        firstVerdicts = true;
        calibrations.noWait(); // nor for its calibrations: they run alongside its first requests
    }

    /** Every periodic task of the pool stops (the control tasks, the probes, the rate saves), then the sources. */
    @Override
    public void close() {
        synchronized (this) {
            checker.close();
        }
        tasks.close();
        stallProbes.close();
        calibrations.close();
        directory.close();
        if (identities != null) {
            identities.close();
        }
        if (telemetry != null) {
            telemetry.close();
        }
    }

    /** After the background tasks stopped: the last save of the rates goes to the file IO thread. */
    void saveRatesAtStop() {
        prefillRates.close();
    }

    /**
     * After that save ran (the file IO thread stopped: the save writes to Redis through the store the leases
     * share, so the leases close after it): the leases, the tokenizers, the KV event streams.
     */
    void closeAfterTasks() {
        if (leases != null) {
            leases.close();
        }
        counter.close();
        kvEvents.ifPresent(KvEventSubscription::close);
        modelTokens.ifPresent(ModelTokenizer::close);
    }
}
