package dev.sluice.gateway.server;

import dev.sluice.gateway.admin.AdminServer;
import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admin.StateView;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.admission.HfTokenizerCounter;
import dev.sluice.gateway.admission.LearnedRatioCounter;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.admission.RequestClassifier;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.ClientLimits;
import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.ConfigWarnings;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.health.HealthChecker;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.health.TelemetryPoller;
import dev.sluice.gateway.health.WorkerIdentityProbe;
import dev.sluice.gateway.metrics.AdmissionMetrics;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.metrics.RoutingMetrics;
import dev.sluice.gateway.pd.AbortSender;
import dev.sluice.gateway.pd.PdContext;
import dev.sluice.gateway.pd.PdExchange;
import dev.sluice.gateway.routing.RoutingPolicies;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerKeepAliveHandler;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running gateway: the client listener, its pipeline, and the parts every request uses
 * (workers, upstream pool, aborts, metrics, health probes). {@link #start} binds; {@link #close}
 * stops everything.
 */
public final class GatewayServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);
    // Armeria's values: enough to keep a stream flowing, small enough that a slow client costs little
    private static final WriteBufferWaterMark CLIENT_WATERMARK = new WriteBufferWaterMark(64 * 1024, 128 * 1024);
    private static final int CLIENT_SEND_BUFFER = 128 * 1024;

    private volatile GatewayConfig config; // replaced by a reload (apply)
    private final Transport transport = Transport.best();
    private final GatewayMetrics metrics = new GatewayMetrics();
    private final WorkerSet workers;
    private final UpstreamPool pool;
    private volatile PdContext pdContext;
    private final AdmissionController admission;
    private final LearnedRatioCounter estimator;
    private final PromptTokenCounter counter;
    private final dev.sluice.gateway.api.RequestJson requestJson; // http.json limits (restart to change)
    private volatile RequestClassifier classifier;
    private final AbortSender aborts;
    private final AdmissionMetrics admissionMetrics;
    private final RoutingPolicy prefillPolicy;
    private final RoutingPolicy decodePolicy;
    private final RoutingMetrics routingMetrics;
    private WorkerReconciler reconciler;
    private ScheduledFuture<?> reaper;
    private final boolean routingUsesPrefix;
    private StateView stateView;
    private java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> configInfo;
    private final Set<PdExchange> live = ConcurrentHashMap.newKeySet();
    private volatile boolean draining;
    private ScheduledFuture<?> expiry;
    private ClientConnections clients; // the connection cap and the per-connection deadlines
    private dev.sluice.gateway.tls.ServerTls serverTls; // listen.tls, or null
    private ScheduledFuture<?> tlsWatch;
    private final ChannelGroup clientChannels = new DefaultChannelGroup("clients", GlobalEventExecutor.INSTANCE);
    private EventLoopGroup bossGroup;
    private EventLoopGroup workerGroup;
    private EventLoopGroup controlGroup;
    private final HealthTable health;
    private HealthChecker checker;
    private TelemetryPoller telemetry;
    private WorkerIdentityProbe identities;
    private AdminServer adminServer;
    private final RecentErrors recentErrors;
    private Channel listener;
    private ConfigReload reload;

    public GatewayServer(GatewayConfig config) {
        this.config = config;
        this.workers = new WorkerSet(config.workers());
        this.health = new HealthTable(workers, config.health(), System::nanoTime);
        this.pool = new UpstreamPool(transport, config.timeouts().connect(), config.upstream().maxConnectionsPerWorker(),
                config.upstream().idleTimeout(), clientTls(config));
        this.aborts = new AbortSender(pool, metrics, config.timeouts().abort());
        aborts.adminKey(config.workers().adminAuthorization());
        AdmissionConfig ac = config.admission();
        this.estimator = new LearnedRatioCounter(ac.tokenizer().initialBytesPerToken(), ac.tokenizer().chatTokensPerMessage());
        this.counter = ac.tokenizer().tokenizerJson().map(path -> exactCounter(path, ac)).orElse(estimator);
        this.requestJson = new dev.sluice.gateway.api.RequestJson(config.http().json());
        this.admissionMetrics = new AdmissionMetrics(metrics, ac);
        RoutingConfig rc = config.routing();
        this.prefillPolicy = RoutingPolicies.create(rc, workers.unified() ? WorkerRole.UNIFIED : WorkerRole.PREFILL);
        this.decodePolicy = RoutingPolicies.create(rc, workers.unified() ? WorkerRole.UNIFIED : WorkerRole.DECODE);
        this.routingMetrics = new RoutingMetrics(metrics.registry());
        routingMetrics.bind(WorkerRole.PREFILL, prefillPolicy, workers.prefill());
        if (!workers.unified()) {
            routingMetrics.bind(WorkerRole.DECODE, decodePolicy, workers.decode());
        }
        this.admission = new AdmissionController(ac, workers, admissionMetrics, System::nanoTime, prefillPolicy,
                decodePolicy, routingMetrics::decided, config.telemetry().staleAfter().toNanos());
        admissionMetrics.bind(admission, counter);
        this.classifier = new RequestClassifier(ac);
        this.recentErrors = new RecentErrors(config.admin().recentErrors());
        this.routingUsesPrefix = prefillPolicy.usesPrefix() || decodePolicy.usesPrefix();
        this.pdContext = pdContext(config);
        health.addListener((w, from, to, cause) -> {
            if (cause != null) {
                metrics.workerEjection(w.role().label(), w.name(), cause.label());
            }
            if (to.state() == WorkerState.EJECTED) {
                // whoever waits on it for a first byte moves on now, not at its deadline (a draining
                // worker, removed by a reload, finishes what it has)
                live.forEach(ex -> ex.workerEjected(w));
            } else if (w.routable()) {
                admission.kick(); // queued requests may go now
            }
        });
        metrics.preRegisterHttpRefusals(List.of("request_line_too_long", "headers_too_large", "too_many_headers",
                "bad_framing", "header_timeout", "body_timeout", "too_many_connections", "body_too_large"));
        for (String reason : List.of("connect", "stale_connection", "worker_busy", "worker_aborted", "kv_transfer", "stall",
                "worker_ejected")) {
            metrics.preRegisterRetry(reason);
        }
        for (var w : workers.all()) {
            for (FailureKind k : FailureKind.values()) {
                metrics.preRegisterEjection(w.role().label(), w.name(), k.label());
            }
        }
        metrics.preRegister(Routes.metricLabels(),
                java.util.Arrays.stream(RejectReason.values()).map(RejectReason::code).toList(),
                workers.unified() ? List.of(WorkerRole.UNIFIED.label())
                        : List.of(WorkerRole.PREFILL.label(), WorkerRole.DECODE.label()),
                workers.all().stream().map(dev.sluice.gateway.routing.Worker::name).toList());
        metrics.bindWorkers(workers, config.telemetry());
        metrics.gauge("sluice.upstream.connections", "open connections from the gateway to workers", pool::openConnections);
        metrics.gauge("sluice.client.connections", "open client connections",
                () -> clients == null ? 0 : clients.open());
    }

    /** TLS towards https:// workers (built whether or not any is configured now: a reload may add one). */
    private static dev.sluice.gateway.tls.ClientTls clientTls(GatewayConfig config) {
        try {
            return dev.sluice.gateway.tls.ClientTls.create(config.upstream().caFile());
        } catch (IOException e) {
            throw new ConfigException("upstream.ca_file: " + e.getMessage());
        }
    }

    public GatewayServer start() throws InterruptedException {
        int threads = config.http().eventLoopThreads() == 0 ? Runtime.getRuntime().availableProcessors()
                : config.http().eventLoopThreads();
        bossGroup = transport.newGroup(1, "sluice-accept");
        workerGroup = transport.newGroup(threads, "sluice-io");
        int maxBody = (int) Math.min(Integer.MAX_VALUE, config.http().maxRequestBodyBytes());
        if (config.listen().tls().isPresent()) {
            try {
                serverTls = dev.sluice.gateway.tls.ServerTls.load(config.listen().tls().get());
            } catch (IOException e) {
                throw new ConfigException("listen.tls: the certificate and key do not load: " + e.getMessage());
            }
            metrics.bindTls(serverTls::notAfter);
        }
        ClientLimits limits = config.http().client();
        clients = new ClientConnections(limits, metrics);
        // strict framing: no bare LF, no duplicate Content-Length, RFC 9112's Transfer-Encoding rules;
        // what Netty lets through that could still be read two ways, RequestGuard refuses
        HttpDecoderConfig decoderConfig = new HttpDecoderConfig()
                .setMaxInitialLineLength(limits.maxInitialLine())
                .setMaxHeaderSize(limits.maxHeaderSize())
                .setValidateHeaders(true)
                .setStrictLineParsing(true)
                .setAllowDuplicateContentLengths(false)
                .setUseRfc9112TransferEncoding(true);
        ServerBootstrap b = new ServerBootstrap()
                .group(bossGroup, workerGroup)
                .channel(transport.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, CLIENT_WATERMARK)
                // a fixed send buffer: the kernel's autotuning (up to 4 MiB) would swallow megabytes of
                // a stream to a slow reader before the watermark, and so backpressure, ever engaged
                .childOption(ChannelOption.SO_SNDBUF, CLIENT_SEND_BUFFER)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (!clients.admit(ch)) {
                            return; // past http.max_connections: refused and closing, no pipeline built
                        }
                        clientChannels.add(ch);
                        RequestGuard guard = new RequestGuard(clients, metrics);
                        if (serverTls != null) {
                            io.netty.handler.ssl.SslHandler tls = serverTls.newHandler(ch.alloc());
                            tls.handshakeFuture().addListener(f -> {
                                if (!f.isSuccess()) {
                                    metrics.tlsHandshakeFailed(); // a scanner, a plain-HTTP client, an old protocol
                                }
                            });
                            ch.pipeline().addLast("tls", tls);
                        }
                        ch.pipeline()
                                .addLast("flush", new FlushConsolidationHandler(256, true))
                                .addLast("bytes", new FirstByteWatch(guard))
                                .addLast("codec", new StrictServerCodec(decoderConfig))
                                .addLast("guard", guard)
                                .addLast("keepalive", new HttpServerKeepAliveHandler())
                                .addLast("aggregator", new BodyLimitAggregator(maxBody, metrics))
                                .addLast("front", new FrontHandler(GatewayServer.this));
                    }
                });
        // bind is the one blocking step, done once at startup on the caller's thread, never on a loop
        listener = b.bind(config.listen().host(), config.listen().port()).sync().channel();
        // health checks, telemetry and the admin listener on a loop of their own: a request loop busy
        // with thousands of streams must not make a healthy worker's /health look timed out
        controlGroup = transport.newGroup(1, "sluice-control");
        if (serverTls != null) {
            long every = config.listen().tls().get().reloadCheck().toMillis();
            tlsWatch = controlGroup.next().scheduleWithFixedDelay(
                    () -> metrics.tlsReload(serverTls.reloadIfChanged().name().toLowerCase()), every, every,
                    TimeUnit.MILLISECONDS);
        }
        checker = new HealthChecker(workers, pool, controlGroup.next(), health);
        checker.start();
        expiry = workerGroup.next().scheduleAtFixedRate(admission::expire, 20, 20, TimeUnit.MILLISECONDS);
        reconciler = new WorkerReconciler(workers, health, admission, metrics, routingMetrics, prefillPolicy, decodePolicy,
                pool, allLoops(), config.telemetry());
        reaper = workerGroup.next().scheduleWithFixedDelay(reconciler::retireDrained, 100, 100, TimeUnit.MILLISECONDS);
        telemetry = new TelemetryPoller(workers, pool, controlGroup.next(), config.telemetry(), health);
        telemetry.start();
        identities = new WorkerIdentityProbe(workers, pool, controlGroup.next(),
                config.disaggregation(), config.telemetry().timeout().multipliedBy(5));
        identities.start();
        metrics.bindNetty(workerGroup);
        if (config.admin().enabled()) {
            stateView = new StateView(config, workers, admission, recentErrors, () -> draining, live::size)
                    .configInfo(configInfo);
            adminServer = new AdminServer(config.admin(), stateView, metrics);
            adminServer.start(bossGroup, controlGroup, transport.serverChannel());
            log.info("admin listening address={}:{}", config.admin().host(), adminServer.port());
        }
        log.info("gateway listening address={} transport={} event_loops={} prefill={} decode={} mode={}",
                listener.localAddress(), transport.name(), threads, workers.prefill().size(), workers.decode().size(),
                config.disaggregation().name().toLowerCase());
        for (String w : ConfigWarnings.of(config)) {
            log.warn("config warning {}", w);
        }
        return this;
    }

    private PdContext pdContext(GatewayConfig c) {
        return new PdContext(workers, pool, aborts, metrics, c.timeouts(), c.http().maxResponseBodyBytes(), admission,
                counter, live, recentErrors, health, c.retries(), dev.sluice.gateway.pd.Drivers.of(c.disaggregation()),
                c.routing().directDecodeMaxTokens(), routingUsesPrefix, c.requestLogging());
    }

    /** What a reload put in force, and what differs but waits for a restart. */
    public record Applied(List<String> applied, List<String> restartRequired) {
    }

    /**
     * Puts a reloaded configuration's live settings in force (see {@link ConfigReload}): checked
     * first, so that a refused change leaves everything as it was. Requests already admitted keep
     * the settings they started with; new ones get the new ones.
     *
     * @throws IllegalArgumentException when a change cannot be applied live (nothing was changed)
     */
    public synchronized Applied apply(GatewayConfig next) {
        GatewayConfig cur = config;
        List<String> restart = ConfigDiff.restartRequired(cur, next);
        boolean workersChanged = !next.workers().equals(cur.workers());
        // everything checked: from here on nothing refuses
        List<String> applied = new java.util.ArrayList<>();
        dev.sluice.gateway.config.AdmissionConfig admissionNext = ConfigDiff.withTokenizer(next.admission(),
                cur.admission().tokenizer());
        if (!admissionNext.equals(cur.admission())) {
            admission.reconfigure(admissionNext);
            classifier = new RequestClassifier(admissionNext);
            if (!admissionNext.priorities().equals(cur.admission().priorities())) {
                admissionMetrics.rebindClasses(admission);
            }
            applied.add("admission");
        }
        if (!next.health().equals(cur.health())) {
            health.reconfigure(next.health());
            if (checker != null) {
                checker.close();
                checker = new HealthChecker(workers, pool, controlGroup.next(), health);
                checker.start();
            }
            applied.add("health");
        }
        if (!next.timeouts().equals(cur.timeouts())) {
            applied.add("timeouts");
        }
        if (!next.retries().equals(cur.retries())) {
            applied.add("retries");
        }
        if (next.requestLogging() != cur.requestLogging()) {
            applied.add("logging");
        }
        GatewayConfig.WorkersConfig workersNow = cur.workers();
        aborts.adminKey(next.workers().adminAuthorization());
        if (workersChanged && next.disaggregation() == cur.disaggregation()) {
            reconciler.reconcile(next.workers());
            workersNow = next.workers();
            applied.add("workers");
        }
        GatewayConfig merged = new GatewayConfig(cur.listen(), cur.disaggregation(), workersNow, next.timeouts(),
                cur.http(), cur.upstream(), next.health(), admissionNext, cur.telemetry(), cur.admin(), next.retries(),
                cur.routing(), next.requestLogging());
        config = merged;
        pdContext = pdContext(merged);
        return new Applied(applied, restart);
    }

    /** Every loop that may hold upstream connections: the request loops and the control loop. */
    private List<io.netty.util.concurrent.EventExecutor> allLoops() {
        List<io.netty.util.concurrent.EventExecutor> loops = new java.util.ArrayList<>();
        workerGroup.forEach(loops::add);
        controlGroup.forEach(loops::add);
        return loops;
    }

    /** Workers a reload removed that still drain (tests, state). */
    public int drainingWorkers() {
        return reconciler.draining();
    }

    /** Where {@code /admin/state} gets its {@code "config"} object (set by {@link ConfigReload}). */
    void stateView(java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> info) {
        this.configInfo = info;
        if (stateView != null) {
            stateView.configInfo(info);
        }
    }

    /** Enables live reload from {@code file}: SIGHUP, a watch on the file, {@code POST /admin/reload}. */
    public ConfigReload reloadFrom(java.nio.file.Path file, boolean sighup) throws IOException {
        return reloadFrom(file, dev.sluice.gateway.config.ConfigOverrides.none(), sighup);
    }

    /** ... with the start-up's overrides (environment, {@code --set}) applied to every reload too. */
    public ConfigReload reloadFrom(java.nio.file.Path file, dev.sluice.gateway.config.ConfigOverrides overrides,
                                   boolean sighup) throws IOException {
        ConfigReload r = new ConfigReload(this, file, overrides).watch();
        if (sighup) {
            r.onSighup();
        }
        reload = r;
        if (adminServer != null) {
            adminServer.onReload(() -> r.reload("admin_api").toJson());
        }
        return r;
    }

    /** The admin listener's bound port, or -1 when disabled. */
    public int adminPort() {
        return adminServer == null ? -1 : adminServer.port();
    }

    /** The bound port (useful with {@code listen.port: 0}). */
    public int port() {
        return ((InetSocketAddress) listener.localAddress()).getPort();
    }

    public GatewayConfig config() {
        return config;
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

    PdContext pdContext() {
        return pdContext;
    }

    public AdmissionController admission() {
        return admission;
    }

    dev.sluice.gateway.api.RequestJson requestJson() {
        return requestJson;
    }

    PromptTokenCounter counter() {
        return counter;
    }

    LearnedRatioCounter estimator() {
        return estimator;
    }

    RequestClassifier classifier() {
        return classifier;
    }

    RecentErrors recentErrors() {
        return recentErrors;
    }

    boolean draining() {
        return draining;
    }

    /** Requests whose exchange has not ended (for drain and tests). */
    public int liveRequests() {
        return live.size();
    }

    private PromptTokenCounter exactCounter(java.nio.file.Path path, AdmissionConfig ac) {
        try {
            return new HfTokenizerCounter(path, ac.tokenizer().threads(), ac.tokenizer().chatTokensPerMessage(), estimator);
        } catch (IOException | RuntimeException e) {
            throw new ConfigException("admission.tokenizer.path: " + path + " cannot be loaded (" + e.getMessage() + ")", e);
        }
    }

    /**
     * Graceful drain (SIGTERM): admit nothing new (503 draining, readiness 503), let queued and
     * in-flight requests finish for up to {@code grace}, then reject what is still queued and
     * abort what is still running, both halves. Blocks the calling (shutdown) thread, never a loop.
     */
    public void drain(Duration grace) throws InterruptedException {
        draining = true;
        admission.drain();
        long deadline = System.nanoTime() + grace.toNanos();
        log.info("draining queued={} in_flight={} grace_ms={}", admission.snapshot().queued(), live.size(), grace.toMillis());
        while (System.nanoTime() < deadline && !(live.isEmpty() && admission.snapshot().idle())) {
            Thread.sleep(20);
        }
        AdmissionSnapshot left = admission.snapshot();
        if (!live.isEmpty() || !left.idle()) {
            log.warn("drain grace over: rejecting queued={} aborting in_flight={}", left.queued(), live.size());
            admission.rejectQueued(RejectReason.DRAINING, "the gateway shut down before this request was served");
            for (PdExchange ex : List.copyOf(live)) {
                ex.abortOnDrain();
            }
            long hard = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (!live.isEmpty() && System.nanoTime() < hard) {
                Thread.sleep(10);
            }
        }
        log.info("drained in_flight={}", live.size());
    }

    /** Waits (bounded) until the first health round marked workers of both roles usable. */
    public boolean awaitReady(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        while (!workers.ready()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(10);
        }
        return true;
    }

    @Override
    public void close() {
        if (reload != null) {
            reload.close();
        }
        if (checker != null) {
            checker.close();
        }
        if (identities != null) {
            identities.close();
        }
        if (telemetry != null) {
            telemetry.close();
        }
        if (adminServer != null) {
            adminServer.close();
        }
        if (expiry != null) {
            expiry.cancel(false);
        }
        if (reaper != null) {
            reaper.cancel(false);
        }
        if (clients != null) {
            clients.close();
        }
        if (tlsWatch != null) {
            tlsWatch.cancel(false);
        }
        counter.close();
        if (listener != null) {
            listener.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        }
        clientChannels.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        if (workerGroup != null) {
            workerGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        if (controlGroup != null) {
            controlGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        if (bossGroup != null) {
            bossGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        metrics.close();
        log.info("gateway stopped");
    }
}
