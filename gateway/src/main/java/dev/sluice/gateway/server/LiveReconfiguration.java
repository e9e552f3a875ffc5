package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.metrics.AdmissionMetrics;
import dev.sluice.gateway.pd.AbortSender;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Puts a reloaded configuration's live settings in force (whoever reloads it: the file watch,
 * SIGHUP, the admin API): checked
 * first, so that a refused change leaves everything as it was. Requests already admitted keep the
 * settings they started with; new ones get the new ones. Works before the gateway starts too.
 * One reload at a time.
 */
final class LiveReconfiguration {
    private final AtomicReference<LiveSettings> live;
    private final boolean routingUsesPrefix;
    private final AdmissionController admission;
    private final AdmissionMetrics admissionMetrics;
    private final HealthTable health;
    private final Runnable restartHealthChecks;
    private final WorkerReconciler reconciler;
    private final AbortSender aborts;

    LiveReconfiguration(AtomicReference<LiveSettings> live, boolean routingUsesPrefix, AdmissionController admission,
                        AdmissionMetrics admissionMetrics, HealthTable health, Runnable restartHealthChecks,
                        WorkerReconciler reconciler, AbortSender aborts) {
        this.live = live;
        this.routingUsesPrefix = routingUsesPrefix;
        this.admission = admission;
        this.admissionMetrics = admissionMetrics;
        this.health = health;
        this.restartHealthChecks = restartHealthChecks;
        this.reconciler = reconciler;
        this.aborts = aborts;
    }

    GatewayConfig config() {
        return live.get().config();
    }

    /**
     * @throws IllegalArgumentException when a change cannot be applied live (nothing was changed)
     */
    synchronized AppliedChanges apply(GatewayConfig next) {
        GatewayConfig cur = live.get().config();
        List<String> restart = ConfigDiff.restartRequired(cur, next);
        boolean workersChanged = !next.workers().equals(cur.workers());
        // everything checked: from here on nothing refuses
        List<String> applied = new ArrayList<>();
        AdmissionConfig admissionNext = ConfigDiff.withTokenizer(next.admission(), cur.admission().tokenizer());
        if (!admissionNext.equals(cur.admission())) {
            admission.reconfigure(admissionNext);
            if (!admissionNext.priorities().equals(cur.admission().priorities())) {
                admissionMetrics.rebindClasses(admission);
            }
            applied.add("admission");
        }
        if (!next.health().equals(cur.health())) {
            health.reconfigure(next.health());
            restartHealthChecks.run();
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
        live.set(LiveSettings.of(merged, routingUsesPrefix));
        return new AppliedChanges(applied, restart);
    }
}
