package dev.sluice.gateway.metrics;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionObserver;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.config.AdmissionConfig;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheus.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * Admission's meters: queue depth per class, pending prompt tokens, the configured limits (so a
 * panel can draw a line at them), the measured prefill rate, rejections by reason, queue wait.
 */
public final class AdmissionMetrics implements AdmissionObserver {
    private final GatewayMetrics metrics;
    private final String pool;
    private volatile List<String> priorities;
    private final List<io.micrometer.core.instrument.Meter> classGauges = new java.util.ArrayList<>();

    public AdmissionMetrics(GatewayMetrics metrics, AdmissionConfig config) {
        this(metrics, config, null);
    }

    /** The meters of {@code pool}'s admission: each carries {@code pool="<name>"} (none when {@code pool} is null). */
    public AdmissionMetrics(GatewayMetrics metrics, AdmissionConfig config, String pool) {
        this.metrics = metrics;
        this.pool = pool;
        this.priorities = config.priorities();
    }

    /** A reload changed the priority classes: one queue-depth gauge per class of the new list. */
    public synchronized void rebindClasses(AdmissionController admission) {
        PrometheusMeterRegistry r = metrics.registry();
        classGauges.forEach(r::remove);
        classGauges.clear();
        priorities = admission.config().priorities();
        bindClasses(r, admission);
    }

    private void bindClasses(PrometheusMeterRegistry r, AdmissionController admission) {
        List<String> names = priorities;
        for (int i = 0; i < names.size(); i++) {
            int cls = i;
            classGauges.add(Gauge.builder("sluice.queue.depth", admission, a -> {
                        int[] byClass = a.snapshot().queuedByClass();
                        return cls < byClass.length ? byClass[cls] : 0;
                    })
                    .description("requests waiting in the gateway's queue").tag("priority", names.get(i))
                    .tags(poolTag()).register(r));
        }
    }

    /** Gauges read a snapshot at scrape time (one short lock per gauge read). */
    public void bind(AdmissionController admission, PromptTokenCounter counter) {
        PrometheusMeterRegistry r = metrics.registry();
        synchronized (this) {
            bindClasses(r, admission);
        }
        gauge(r, "sluice.pending.prompt.tokens", admission, a -> a.snapshot().pendingTokens(),
                "prompt tokens admitted and not yet prefilled (queued plus in prefill)");
        gauge(r, "sluice.prefill.inflight.tokens", admission, a -> a.snapshot().inflightPrefillTokens(),
                "prompt tokens dispatched to prefill workers and not yet prefilled");
        gauge(r, "sluice.prefill.throughput.tokens.per.second", admission, a -> a.snapshot().prefillTokensPerSecond(),
                "measured prefill drain rate used for wait predictions and Retry-After");
        Gauge.builder("sluice.token.estimator.bytes.per.token", counter, PromptTokenCounter::bytesPerToken)
                .description("learned UTF-8 bytes per prompt token").tags(poolTag()).register(r);
        metrics.preRegisterRejections(pool, java.util.Arrays.stream(RejectReason.values()).map(RejectReason::code)
                .toList());
        // read at scrape time: a reloaded limit shows at once
        limit(r, "max_queued_requests", () -> admission.config().maxQueuedRequests());
        limit(r, "max_pending_tokens", () -> admission.config().maxPendingTokens());
        limit(r, "max_request_tokens", () -> admission.config().maxRequestTokens());
        limit(r, "prefill_max_inflight_requests", () -> admission.config().prefillMaxInflightRequests());
        limit(r, "prefill_max_inflight_tokens", () -> admission.config().prefillMaxInflightTokens());
        limit(r, "decode_max_inflight_streams", () -> admission.config().decodeMaxInflightStreams());
        limit(r, "queue_timeout_seconds", () -> admission.config().queueTimeout().toMillis() / 1000.0);
    }

    private void gauge(PrometheusMeterRegistry r, String name, AdmissionController a,
                       ToDoubleFunction<AdmissionController> f, String description) {
        Gauge.builder(name, a, f).description(description).tags(poolTag()).register(r);
    }

    private void limit(PrometheusMeterRegistry r, String limit, java.util.function.Supplier<Number> value) {
        Gauge.builder("sluice.admission.limit", value).description("configured admission limits")
                .tag("limit", limit).tags(poolTag()).register(r);
    }

    @Override
    public void rejected(Ticket ticket, RejectReason reason) {
        metrics.rejection(pool, reason.code());
    }

    @Override
    public void dispatched(Ticket ticket) {
        List<String> names = priorities;
        int p = ticket.priority();
        metrics.queueWait(pool, p < names.size() ? names.get(p) : "unknown", Duration.ofNanos(ticket.queuedNanos()));
    }


    private String[] poolTag() {
        return pool == null ? new String[0] : new String[]{PoolLabels.TAG, pool};
    }
}
