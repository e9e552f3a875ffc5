package dev.sluice.gateway.admin;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.admission.WorkerWindow;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.routing.SuspectProbe;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerStatus;
import dev.sluice.gateway.routing.WorkerIdentity;
import dev.sluice.gateway.routing.WorkerTelemetry;
import dev.sluice.gateway.routing.WorkerTelemetry.Field;
import java.time.Instant;
import java.util.Locale;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

/** The JSON of {@code GET /admin/state}: limits in force, queue, workers, recent errors. */
public final class StateView {
    private final GatewayConfig config;
    private final WorkerSet workers;
    private final AdmissionController admission;
    private final RecentErrors errors;
    private final BooleanSupplier draining;
    private final IntSupplier liveRequests;

    public StateView(GatewayConfig config, WorkerSet workers, AdmissionController admission, RecentErrors errors,
                     BooleanSupplier draining, IntSupplier liveRequests) {
        this.config = config;
        this.workers = workers;
        this.admission = admission;
        this.errors = errors;
        this.draining = draining;
        this.liveRequests = liveRequests;
    }

    private volatile java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> configInfo;

    /** What {@code "config"} shows: the running configuration's hash and the last reload. */
    public StateView configInfo(java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> info) {
        this.configInfo = info;
        return this;
    }

    private volatile java.util.function.Supplier<java.util.Optional<CoordinationStatus>> coordination =
            java.util.Optional::empty;

    /** What {@code "coordination"} shows (absent without {@code coordination:}). */
    public StateView coordination(java.util.function.Supplier<java.util.Optional<CoordinationStatus>> status) {
        this.coordination = status;
        return this;
    }

    private volatile dev.sluice.gateway.cacheview.CacheView kvView;

    /** The workers' KV event view, when {@code routing.kv_events} is on: shown per worker and as decision counts. */
    public StateView kvView(dev.sluice.gateway.cacheview.CacheView view) {
        this.kvView = view;
        return this;
    }

    private volatile java.util.function.Function<Worker, String> sources = w -> "file";

    /** Where each worker came from (file, dns, kubernetes, admin), shown as its {@code "source"}. */
    public StateView workerSources(java.util.function.Function<Worker, String> sources) {
        this.sources = sources;
        return this;
    }

    private volatile java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> pools;

    /** What {@code "pools"} shows: every model pool's models, limits, queue and workers (absent: one pool). */
    public StateView pools(java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> pools) {
        this.pools = pools;
        return this;
    }

    private volatile BooleanSupplier ready;

    /** What {@code "ready"} shows when it is not this view's workers alone: /readiness's verdict (with pools). */
    public StateView ready(BooleanSupplier verdict) {
        this.ready = verdict;
        return this;
    }

    public ObjectNode render() {
        long now = System.nanoTime();
        AdmissionSnapshot s = admission.snapshot();
        AdmissionConfig a = admission.config(); // the running limits, reloads included
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("time", Instant.now().toString());
        root.put("draining", draining.getAsBoolean());
        BooleanSupplier verdict = ready;
        root.put("ready", verdict != null ? verdict.getAsBoolean() : workers.ready() && !draining.getAsBoolean());
        root.put("live_requests", liveRequests.getAsInt());
        if (configInfo != null) {
            root.set("config", configInfo.get());
        }
        if (pools != null) {
            root.set("pools", pools.get());
        }
        ObjectNode limits = root.putObject("limits");
        limits.put("max_queued_requests", a.maxQueuedRequests()).put("max_pending_tokens", a.maxPendingTokens())
                .put("max_request_tokens", a.maxRequestTokens()).put("queue_timeout_ms", a.queueTimeout().toMillis())
                .put("prefill_max_inflight_requests", a.prefillMaxInflightRequests())
                .put("prefill_max_inflight_tokens", a.prefillMaxInflightTokens())
                .put("prefill_max_inflight_time_ms", a.prefillMaxInflightTime().toMillis())
                .put("decode_max_inflight_streams", a.decodeMaxInflightStreams())
                .put("early_rejection", a.prefillRate().earlyRejection());
        coordination.get().ifPresent(c -> CoordinationView.render(c, root.putObject("coordination")));
        ObjectNode queue = root.putObject("queue");
        queue.put("queued", s.queued()).put("pending_tokens", s.pendingTokens())
                .put("inflight_prefill_tokens", s.inflightPrefillTokens()).put("dispatched", s.dispatched())
                .put("prefill_tokens_per_second", Math.round(s.prefillTokensPerSecond()))
                .put("throughput_measured", s.throughputMeasured())
                .put("prediction_slack_seconds", s.predictionSlackSeconds())
                .put("door_margin_per_prefill_second", s.doorMarginPerSecond());
        ObjectNode classes = queue.putObject("by_class");
        for (int i = 0; i < a.priorities().size(); i++) {
            ObjectNode c = classes.putObject(a.priorities().get(i));
            c.put("queued", s.queuedByClass()[i]);
            ObjectNode tenants = c.putObject("tenants");
            s.queuedTenantsByClass().get(i).forEach(tenants::put);
        }
        ArrayNode list = root.putArray("workers");
        for (Worker w : workers.all()) {
            ObjectNode o = list.addObject();
            o.put("role", w.role().label()).put("worker", w.name()).put("url", w.url()).put("source", sources.apply(w))
                    .put("identity_pending", w.identityPending())
                    .put("usable", w.isAvailable()).put("inflight", w.inflight());
            WorkerStatus st = w.status();
            o.put("state", st.state().label()).put("state_reason", st.reason())
                    .put("state_since", st.since().equals(Instant.EPOCH) ? null : st.since().toString());
            w.suspectProbe().ifPresent(p -> stallProbe(o.putObject("stall_probe"), p));
            WorkerWindow window = s.perWorker().getOrDefault(w, new WorkerWindow(w.role(), 0, 0, 0));
            o.putObject("window").put("requests", window.requests()).put("tokens", window.tokens());
            ranks(o.putObject("dp_ranks"), w, window);
            AdmissionSnapshot.PrefillRate rate = s.prefillRates().get(w);
            if (rate != null) {
                o.putObject("prefill_rate").put("tokens_per_second", Math.round(rate.tokensPerSecond()))
                        .put("source", rate.source());
            }
            WorkerIdentity id = w.identity();
            ObjectNode ident = o.putObject("identity");
            ident.put("server", id.server()).put("version", id.version()).put("disaggregation_mode", id.mode())
                    .put("dp_size", id.dpSize()).put("engines", id.engines()).put("running_per_rank", id.runningPerRank())
                    .put("misconfigured", id.misconfigured());
            id.problems().forEach(ident.putArray("problems")::add);
            id.warnings().forEach(ident.putArray("warnings")::add);
            WorkerTelemetry t = w.telemetry();
            ObjectNode tel = o.putObject("telemetry");
            tel.put("last_poll_ok", t.lastPollOk());
            double age = t.ageSeconds(now);
            if (Double.isInfinite(age)) {
                tel.putNull("age_seconds");
            } else {
                tel.put("age_seconds", Math.round(age * 10) / 10.0);
            }
            long stale = config.telemetry().staleAfter().toNanos();
            tel.put("stale", t.fetchedAtNanos() == 0 || now - t.fetchedAtNanos() > stale);
            for (Field f : Field.values()) {
                double v = t.value(f, now, stale);
                String key = f.name().toLowerCase(Locale.ROOT);
                if (Double.isNaN(v)) {
                    tel.putNull(key);
                } else {
                    tel.put(key, v);
                }
            }
        }
        dev.sluice.gateway.cacheview.CacheView kv = kvView;
        if (kv != null) {
            ObjectNode k = root.putObject("kv_events");
            ObjectNode decisions = k.putObject("decisions");
            for (dev.sluice.gateway.routing.KvCacheView.Source src : dev.sluice.gateway.routing.KvCacheView.Source.values()) {
                decisions.put(src.label(), kv.decisions(src));
            }
            ArrayNode per = k.putArray("workers");
            for (var w : kv.workers()) {
                var b = kv.of(w).orElse(null);
                if (b == null) {
                    continue; // retired by a reload since the list was read
                }
                ObjectNode o = per.addObject().put("worker", w.name()).put("url", w.url())
                        .put("freshness", kv.freshness(w).label()).put("blocks", b.size())
                        .put("block_size", b.blockSize()).put("events", b.events()).put("gaps", b.gaps())
                        .put("orphans", b.orphans()).put("resubscribes", b.resubscribes())
                        .put("dp_ranks", b.ranks());
                long last = b.lastEventNanos();
                if (last == 0) {
                    o.putNull("last_event_age_seconds");
                } else {
                    o.put("last_event_age_seconds", Math.round((now - last) / 1e8) / 10.0);
                }
            }
        }
        ArrayNode recent = root.putArray("recent_errors");
        for (RecentErrors.Entry e : errors.snapshot()) {
            recent.addObject().put("at", e.at().toString()).put("rid", e.rid()).put("route", e.route())
                    .put("status", e.status()).put("outcome", e.outcome()).put("detail", e.detail());
        }
        return root;
    }


    /**
     * Where the panic mode's probing of a suspect worker stands: by when the next probe starts
     * (while one runs: should it fail), the running one's verdict, how many failed since the verdict.
     */
    /** How the worker's data-parallel ranks are routed: how many, why, and what each holds (the gateway's own and reported). */
    private static void ranks(ObjectNode o, Worker w, WorkerWindow window) {
        dev.sluice.gateway.routing.RankPlan plan = w.rankPlan();
        o.put("routed", plan.ranks()).put("detail", plan.note());
        window.rankRequests().forEach(o.putArray("window_requests")::add);
        w.telemetry().rankRequests().forEach(o.putArray("reported_requests")::add);
    }

    private static void stallProbe(ObjectNode o, SuspectProbe p) {
        long now = System.nanoTime();
        long nextIn = Math.max(0, p.nextNanos() - now);
        o.put("running", p.running()).put("failed", p.failed()).put("next_in_ms", nextIn / 1_000_000)
                .put("next_at", Instant.now().plusNanos(nextIn).toString());
        if (p.running()) {
            o.put("verdict_in_ms", Math.max(0, p.verdictNanos() - now) / 1_000_000);
        }
    }
}
