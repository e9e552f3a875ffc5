package dev.sluice.gateway.pd;

import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.tracing.Tracing;
import dev.sluice.gateway.upstream.UpstreamPool;
import java.util.Set;

/**
 * The parts of the running gateway an exchange works with, built once at start-up: the workers
 * and the connections to them, admission and the token estimator, health, metrics, and the set of
 * requests in flight (drain and ejections reach them through it), and the model clients ask for
 * (the gateway's own stall probes name it), and tracing ({@link Tracing#off()} unless configured).
 */
public record PdServices(WorkerSet workers, UpstreamPool pool, AbortSender aborts, GatewayMetrics metrics,
                         AdmissionController admission, PromptTokenCounter counter, HealthTable health,
                         RecentErrors recentErrors, Set<InFlight> live, ServedModel servedModel, Tracing tracing) {

    /** Without tracing. */
    public PdServices(WorkerSet workers, UpstreamPool pool, AbortSender aborts, GatewayMetrics metrics,
                      AdmissionController admission, PromptTokenCounter counter, HealthTable health,
                      RecentErrors recentErrors, Set<InFlight> live, ServedModel servedModel) {
        this(workers, pool, aborts, metrics, admission, counter, health, recentErrors, live, servedModel, Tracing.off());
    }
}
