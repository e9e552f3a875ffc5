package dev.sluice.gateway.health;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.background.PeriodicTask;
import dev.sluice.gateway.config.DisaggregationMode;
import dev.sluice.gateway.routing.RankPlan;
import dev.sluice.gateway.routing.RankPlanner;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerIdentity;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks every worker what it is, at start, for every worker a reload adds, and again every
 * {@link #PERIOD} (a worker restarted with other flags): SGLang's {@code /server_info} (flat server
 * arguments: {@code disaggregation_mode}, {@code disaggregation_bootstrap_port}, {@code dp_size},
 * {@code enable_metrics}, {@code version}; sgl-project/sglang
 * {@code python/sglang/srt/entrypoints/http_server.py}, {@code get_server_info}), the deprecated
 * {@code /get_server_info} on older servers, and vLLM's {@code /v1/models}, {@code /version} and
 * {@code /metrics} (for its engines: {@link WorkerIdentity#engines()}). A version
 * outside {@link CoveredReleases} is a warning (logged once per worker, as every change of identity). Where the answer
 * contradicts the configuration the worker's {@link WorkerIdentity} names it, the log says it at
 * ERROR, and {@code /admin/state}, {@code status} and {@code sluice_worker_misconfigured} show it.
 * The worker is not taken out of rotation for it: the description may be wrong where traffic is
 * right, and health checks decide. Runs on one event loop.
 */
public final class WorkerIdentityProbe implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WorkerIdentityProbe.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_BODY = 1 << 20;
    private static final int METRICS_BODY = 8 << 20;
    static final Duration PERIOD = Duration.ofSeconds(60);
    static final Duration RETRY = Duration.ofSeconds(5);
    private static final Duration TICK = Duration.ofMillis(250); // a new worker is asked within it

    private final WorkerSet workers;
    private final UpstreamPool pool;
    private final EventLoop loop;
    private final DisaggregationMode mode;
    private final Duration timeout;
    /** When each worker was last asked ({@code System.nanoTime()}), and which are being asked now: loop-confined. */
    private final Map<Worker, Long> askedAt = new HashMap<>();
    private final Set<Worker> asking = new HashSet<>();
    private final BackgroundTasks background;
    private PeriodicTask task;
    private Runnable onConfirmed = () -> { };
    private RankPlanner ranks = RankPlanner.OFF;
    private java.util.function.IntSupplier decodeStreams = () -> 0;

    public WorkerIdentityProbe(WorkerSet workers, UpstreamPool pool, EventLoop loop, DisaggregationMode mode,
                               Duration timeout, BackgroundTasks background) {
        this.workers = workers;
        this.background = background;
        this.pool = pool;
        this.loop = loop;
        this.mode = mode;
        this.timeout = timeout;
    }

    /** Runs (on the probe's loop) when a worker waiting for its identity check passed it. */
    public WorkerIdentityProbe onConfirmed(Runnable r) {
        this.onConfirmed = java.util.Objects.requireNonNull(r, "r");
        return this;
    }

    /** How a worker's reported {@code dp_size} becomes its {@link RankPlan} ({@code routing.dp_aware}). */
    public WorkerIdentityProbe ranks(RankPlanner planner) {
        this.ranks = java.util.Objects.requireNonNull(planner, "planner");
        return this;
    }

    /**
     * The decode window per worker ({@code admission.decode.max_inflight_streams}, read at each answer): a
     * decode routed per rank whose share per rank is at or below its own running cap gets a warning
     * ({@link dev.sluice.gateway.admission.DecodeLookahead}).
     */
    public WorkerIdentityProbe decodeWindow(java.util.function.IntSupplier streams) {
        this.decodeStreams = java.util.Objects.requireNonNull(streams, "streams");
        return this;
    }

    public void start() {
        task = background.every("worker_identity", loop, Duration.ZERO, TICK, this::tick);
    }

    /**
     * A worker is asked once a {@link #PERIOD}; one that never answered (new, added by a reload, or
     * down) every {@link #RETRY}; never twice at once.
     */
    private void tick() {
        long now = System.nanoTime();
        askedAt.keySet().retainAll(workers.all());
        for (Worker w : workers.all()) {
            Long last = askedAt.get(w);
            Duration due = w.identity() == WorkerIdentity.UNKNOWN ? RETRY : PERIOD;
            if (!asking.contains(w) && (last == null || now - last >= due.toNanos())) {
                askedAt.put(w, now);
                asking.add(w);
                probe(w);
            }
        }
    }

    private void probe(Worker w) {
        get(w, "/server_info", r -> {
            if (r.failure() == null && r.status() == 404) {
                get(w, "/get_server_info", old -> {
                    if (old.failure() == null && old.status() == 404) {
                        get(w, "/v1/models", models -> {
                            WorkerIdentity id = fromModels(models);
                            if (id == null || !id.server().equals("vllm")) {
                                record(w, id);
                                return;
                            }
                            // vLLM's GET /version: {"version": VLLM_VERSION} (vllm-project/vllm@048027fbbdb8
                            // vllm/entrypoints/openai/api_server.py, show_version)
                            get(w, "/version", version -> {
                                WorkerIdentity versioned = withVersion(id, version);
                                // its engines (data-parallel ranks) are known only from its per-engine gauges
                                get(w, "/metrics", metrics -> {
                                    // an unreadable scrape keeps what was counted: one failed poll must not
                                    // flip the worker's routing for a minute
                                    int counted = engines(metrics);
                                    int known = w.identity().server().equals("vllm") ? w.identity().engines() : 0;
                                    record(w, versioned.withEngines(counted >= 0 ? counted : known));
                                });
                            });
                        });
                    } else {
                        record(w, fromServerInfo(w, old));
                    }
                });
            } else {
                record(w, fromServerInfo(w, r));
            }
        });
    }

    private void get(Worker w, String path, java.util.function.Consumer<UpstreamFetch.Result> then) {
        // a vLLM server's /metrics holds every histogram once per engine: the telemetry poller's bound
        int limit = path.equals("/metrics") ? METRICS_BODY : MAX_BODY;
        UpstreamFetch.get(pool, loop, w, path, timeout, limit).addListener(f ->
                then.accept((UpstreamFetch.Result) f.getNow()));
    }

    private void record(Worker w, WorkerIdentity id) {
        asking.remove(w);
        if (id == null) {
            return; // no answer: keep what was known, ask again later
        }
        WorkerIdentity before = w.identity();
        if (w.role() == WorkerRole.DECODE) {
            int ranksNow = ranks.plan(id).ranks();
            WorkerIdentity judged = id;
            id = dev.sluice.gateway.admission.DecodeLookahead.bubble(decodeStreams.getAsInt(), ranksNow,
                    id.runningPerRank()).map(judged::withWarning).orElse(judged);
        }
        w.identity(id);
        planRanks(w, id);
        if (w.identityPending() && !id.misconfigured()) {
            w.identityConfirmed();
            log.info("worker identity check passed role={} worker={} (in rotation once its health check passes)",
                    w.role().label(), w.name());
            onConfirmed.run();
        } else if (w.identityPending() && !id.equals(before)) {
            log.warn("worker kept out of rotation role={} worker={}: its identity check failed", w.role().label(),
                    w.name());
        }
        if (id.equals(before)) {
            return;
        }
        for (String p : id.problems()) {
            log.error("worker misconfigured role={} worker={} server={} version={} problem=\"{}\"", w.role().label(),
                    w.name(), id.server(), id.version(), p);
        }
        for (String warning : id.warnings()) {
            log.warn("worker setting role={} worker={} server={} detail=\"{}\"", w.role().label(), w.name(),
                    id.server(), warning);
        }
        if (!id.misconfigured()) {
            log.info("worker identity role={} worker={} server={} version={} mode={} dp_size={} engines={}",
                    w.role().label(), w.name(), id.server(), id.version(), id.mode().isEmpty() ? "-" : id.mode(),
                    id.dpSize(), id.engines());
        }
        String mismatch = ranks.mismatch(id);
        if (mismatch != null) {
            log.warn("worker dp_size differs from the config role={} worker={} detail=\"{}\"", w.role().label(),
                    w.name(), mismatch);
        }
    }

    /** The worker's ranks as routing targets, from what it just said it is; logged when that changes. */
    private void planRanks(Worker w, WorkerIdentity id) {
        RankPlan plan = ranks.plan(id);
        if (!plan.equals(w.rankPlan())) {
            w.rankPlan(plan);
            log.info("worker dp routing role={} worker={} ranks={} detail=\"{}\"", w.role().label(), w.name(),
                    plan.ranks(), plan.note());
        }
    }

    private WorkerIdentity fromServerInfo(Worker w, UpstreamFetch.Result r) {
        if (!r.ok()) {
            return null;
        }
        JsonNode info;
        try {
            info = JSON.readTree(r.body());
        } catch (IOException e) {
            return null;
        }
        if (info == null || !info.isObject()) {
            return null;
        }
        return judge(w, info, mode);
    }

    /** The SGLang server description against the configuration. */
    static WorkerIdentity judge(Worker w, JsonNode info, DisaggregationMode mode) {
        String server = info.has("disaggregation_mode") || info.has("tp_size") ? "sglang" : "unknown";
        String reported = info.path("disaggregation_mode").asText("");
        List<String> problems = new ArrayList<>();
        List<String> warnings = new ArrayList<>();
        if (mode == DisaggregationMode.VLLM && server.equals("sglang")) {
            problems.add("an SGLang server, but disaggregation: vllm speaks vLLM's kv_transfer_params handoff");
        } else if (mode == DisaggregationMode.SGLANG && !reported.isEmpty()) {
            String expected = w.role() == WorkerRole.PREFILL ? "prefill" : "decode";
            if (!reported.equals(expected)) {
                problems.add("configured as " + expected + " but the server runs --disaggregation-mode " + reported
                        + (reported.equals("null") ? " (a unified server)" : "")
                        + (reported.equals("prefill") || reported.equals("decode")
                        ? ": are workers.prefill and workers.decode swapped?" : ""));
            }
            Integer configured = w.bootstrapPort();
            JsonNode port = info.get("disaggregation_bootstrap_port");
            if (w.role() == WorkerRole.PREFILL && configured != null && port != null && port.isIntegralNumber()
                    && port.asInt() != configured) {
                problems.add("bootstrap_port " + configured + " is configured but the prefill listens on "
                        + "--disaggregation-bootstrap-port " + port.asInt() + ": every decode would fail its KV "
                        + "transfer");
            }
        } else if (mode == DisaggregationMode.NONE && (reported.equals("prefill") || reported.equals("decode"))) {
            problems.add("a PD " + reported + " server (--disaggregation-mode " + reported + ") listed under "
                    + "workers.unified: it cannot serve a request alone");
        }
        if (info.has("enable_metrics") && !info.path("enable_metrics").asBoolean(true)) {
            warnings.add("started without --enable-metrics: no /metrics, so no KV usage or queue telemetry (the "
                    + "load route still gives the queue)");
        }
        String version = info.path("version").asText("");
        CoveredReleases.outside(server, version).ifPresent(warnings::add);
        return new WorkerIdentity(server, version, reported, info.path("dp_size").asInt(0), problems, warnings, 0,
                runningPerRank(info));
    }

    /**
     * Requests one rank runs at once, 0 when the description does not tell: newer SGLang reports each rank's
     * cap as {@code effective_max_running_requests_per_dp} in {@code internal_states} (the scheduler's own
     * {@code max_running_requests}); older ones only the argument, which with DP attention each rank gets
     * {@code // dp_size} of (TpModelWorker.__init__, sgl-project/sglang@4f34e24af764d45c2dde4a17cadcdaa7d08a7248
     * python/sglang/srt/managers/tp_worker.py). The argument is null when left to SGLang (then sized from memory).
     */
    static int runningPerRank(JsonNode info) {
        JsonNode effective = info.path("internal_states").path(0).path("effective_max_running_requests_per_dp");
        if (effective.isIntegralNumber() && effective.asInt() > 0) {
            return effective.asInt();
        }
        JsonNode total = info.path("max_running_requests");
        if (!total.isIntegralNumber() || total.asInt() <= 0) {
            return 0;
        }
        int dp = info.path("dp_size").asInt(1);
        boolean divided = info.path("enable_dp_attention").asBoolean(false) && dp > 1;
        return divided ? Math.max(0, total.asInt() / dp) : total.asInt();
    }

    private static WorkerIdentity fromModels(UpstreamFetch.Result r) {
        if (!r.ok()) {
            return null;
        }
        try {
            JsonNode models = JSON.readTree(r.body());
            String owner = models.path("data").path(0).path("owned_by").asText("");
            return new WorkerIdentity(owner.isEmpty() ? "unknown" : owner, "", "", 0, List.of(), List.of());
        } catch (IOException e) {
            return null;
        }
    }

    /** {@code id} with the version vLLM's {@code /version} gave, if it answered one (judged by {@link CoveredReleases}). */
    static WorkerIdentity withVersion(WorkerIdentity id, UpstreamFetch.Result r) {
        if (!r.ok()) {
            return id;
        }
        try {
            String version = JSON.readTree(r.body()).path("version").asText("");
            List<String> warnings = new ArrayList<>(id.warnings());
            CoveredReleases.outside(id.server(), version).ifPresent(warnings::add);
            return new WorkerIdentity(id.server(), version, id.mode(), id.dpSize(), id.problems(), warnings,
                    id.engines(), id.runningPerRank());
        } catch (IOException | RuntimeException e) {
            return id;
        }
    }

    /**
     * The engines a vLLM server's {@code /metrics} shows: the distinct {@code engine} labels of
     * {@code vllm:num_requests_running} (one series per engine core its API server manages; see
     * {@link dev.sluice.gateway.routing.RankPlanner}); 0 when it has none, -1 when it could not be read.
     */
    static int engines(UpstreamFetch.Result r) {
        if (!r.ok()) {
            return -1;
        }
        return PrometheusText.engines(PrometheusText.read(r.text())).size();
    }

    @Override
    public void close() {
        if (task != null) {
            task.close();
        }
    }
}
