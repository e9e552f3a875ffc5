package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.health.ProbeOutcome;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.pd.AbortCause;
import dev.sluice.gateway.pd.RetryReason;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.Arrays;
import java.util.List;

/**
 * Exports at 0, from start-up, every counter whose label values are known in advance, so that a
 * dashboard shows 0 rather than "No data" and {@code rate()} sees the first event. The values come
 * from the enums that define them (one list each), never from a list written again here.
 */
final class StartupMetrics {
    private StartupMetrics() {
    }

    static void preRegister(GatewayMetrics metrics, WorkerSet workers) {
        metrics.preRegisterHttpRefusals(RequestGuard.REFUSAL_REASONS);
        RetryReason.labels().forEach(metrics::preRegisterRetry);
        for (Worker w : workers.all()) {
            for (FailureKind k : FailureKind.values()) {
                metrics.preRegisterEjection(w.role().label(), w.name(), k.label());
            }
            for (String result : ProbeOutcome.labels()) {
                metrics.preRegisterStallProbe(w.role().label(), w.name(), result);
            }
        }
        metrics.preRegister(Routes.metricLabels(), AbortCause.labels(), workers.unified() ? List.of(WorkerRole.UNIFIED.label())
                        : List.of(WorkerRole.PREFILL.label(), WorkerRole.DECODE.label()),
                workers.all().stream().map(Worker::name).toList());
    }

    /** The connection gauges (each pool exports its workers' label values and gauges: {@link ModelPool}). */
    static void bind(GatewayMetrics metrics, java.util.function.IntSupplier upstream,
                     java.util.function.IntSupplier clients) {
        metrics.gauge("sluice.upstream.connections", "open connections from the gateway to workers", () -> upstream.getAsInt());
        metrics.gauge("sluice.client.connections", "open client connections", () -> clients.getAsInt());
    }
}
