package dev.sluice.gateway.server;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.GatewayConfig;
import java.util.ArrayList;
import java.util.List;

/** What a reloaded configuration changes that cannot be applied live (see {@link ConfigReload}). */
final class ConfigDiff {
    private ConfigDiff() {
    }

    /** Sections that differ but take effect only at the next start; the rest of the file still applies. */
    static List<String> restartRequired(GatewayConfig cur, GatewayConfig next) {
        List<String> restart = new ArrayList<>();
        check(restart, "listen", cur.listen(), next.listen());
        check(restart, "disaggregation", cur.disaggregation(), next.disaggregation());
        check(restart, "http", cur.http(), next.http());
        check(restart, "upstream", cur.upstream(), next.upstream());
        check(restart, "telemetry", cur.telemetry(), next.telemetry());
        check(restart, "admin", cur.admin(), next.admin());
        check(restart, "routing", cur.routing(), next.routing());
        check(restart, "admission.tokenizer", cur.admission().tokenizer(), next.admission().tokenizer());
        if (!next.workers().equals(cur.workers()) && next.disaggregation() != cur.disaggregation()) {
            restart.add("workers"); // a different topology: with the mode, at the next start
        }
        return restart;
    }

    /** {@code a} with the running tokenizer (a different one needs a restart). */
    static AdmissionConfig withTokenizer(AdmissionConfig a, AdmissionConfig.TokenizerConfig tokenizer) {
        return new AdmissionConfig(a.maxQueuedRequests(), a.maxPendingTokens(), a.queueTimeout(), a.maxRequestTokens(),
                a.prefillMaxInflightRequests(), a.prefillMaxInflightTokens(), a.decodeMaxInflightStreams(),
                a.initialPrefillTokensPerSecond(), a.retryAfterMin(), a.retryAfterMax(), a.drainGrace(), a.priorities(),
                a.defaultPriority(), a.apiKeys(), a.requireApiKey(), a.tenantLimits(), tokenizer);
    }

    private static void check(List<String> restart, String key, Object cur, Object next) {
        if (!next.equals(cur)) {
            restart.add(key);
        }
    }
}
