package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.config.ConfigSection;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.ReloadPlan;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.metrics.AdmissionMetrics;
import dev.sluice.gateway.pd.AbortSender;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Puts a reloaded configuration's live settings in force (whoever reloads it: the file watch,
 * SIGHUP, the admin API): checked
 * first, so that a refused change leaves everything as it was. Requests already admitted keep the
 * settings they started with; new ones get the new ones. Works before the gateway starts too.
 * One reload at a time.
 */
final class LiveReconfiguration implements Reconfigurable {
    private final AtomicReference<LiveSettings> live;
    private final boolean routingUsesPrefix;
    private final AdmissionController admission;
    private final AdmissionMetrics admissionMetrics;
    private final HealthTable health;
    private final Runnable restartHealthChecks;
    private final dev.sluice.gateway.discovery.WorkerDirectory directory;
    private final AbortSender aborts;

    LiveReconfiguration(AtomicReference<LiveSettings> live, boolean routingUsesPrefix, AdmissionController admission,
                        AdmissionMetrics admissionMetrics, HealthTable health, Runnable restartHealthChecks,
                        dev.sluice.gateway.discovery.WorkerDirectory directory, AbortSender aborts) {
        this.live = live;
        this.routingUsesPrefix = routingUsesPrefix;
        this.admission = admission;
        this.admissionMetrics = admissionMetrics;
        this.health = health;
        this.restartHealthChecks = restartHealthChecks;
        this.directory = directory;
        this.aborts = aborts;
    }

    GatewayConfig config() {
        return live.get().config();
    }

    /**
     * @throws IllegalArgumentException when a change cannot be applied live (nothing was changed)
     */
    @Override
    public synchronized AppliedChanges apply(GatewayConfig next) {
        GatewayConfig cur = live.get().config();
        // what takes effect how is declared once (config.ConfigSection); the plan is checked whole first
        ReloadPlan plan = ReloadPlan.of(cur, next);
        GatewayConfig merged = plan.config();
        if (plan.applies(ConfigSection.ADMISSION)) {
            admission.reconfigure(merged.admission());
            if (!merged.admission().priorities().equals(cur.admission().priorities())) {
                admissionMetrics.rebindClasses(admission);
            }
        }
        if (plan.applies(ConfigSection.HEALTH)) {
            health.reconfigure(merged.health());
            restartHealthChecks.run();
        }
        aborts.adminKey(next.workers().adminAuthorization());
        if (plan.applies(ConfigSection.WORKERS)) {
            directory.configure(merged.workers());
        }
        // routing (and so the KV event tokenizer) takes a restart: the loaded one stays
        live.set(LiveSettings.of(merged, routingUsesPrefix, live.get().exchange().promptTokens()));
        return new AppliedChanges(plan.appliedKeys(), plan.restartRequiredKeys());
    }
}
