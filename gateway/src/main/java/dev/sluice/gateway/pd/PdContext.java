package dev.sluice.gateway.pd;

import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.config.RequestLogging;
import dev.sluice.gateway.config.RetryConfig;
import dev.sluice.gateway.config.TimeoutsConfig;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamPool;
import java.util.Set;

/** What a prefill/decode exchange needs from the running gateway. */
public record PdContext(WorkerSet workers, UpstreamPool pool, AbortSender aborts, GatewayMetrics metrics,
                        TimeoutsConfig timeouts, long maxResponseBodyBytes, AdmissionController admission,
                        PromptTokenCounter counter, Set<PdExchange> live, RecentErrors recentErrors,
                        HealthTable health, RetryConfig retries, Drivers drivers, long directDecodeMaxTokens,
                        boolean routingUsesPrefix, RequestLogging requestLogging) {
}
