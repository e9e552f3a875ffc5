package dev.sluice.gateway.server;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.ReloadPlan;
import java.util.List;

/**
 * What a reloaded configuration changes that cannot be applied live: now a delegate of
 * {@link ReloadPlan}, kept until {@link GatewayServer#apply} uses the plan itself; then delete it.
 */
final class ConfigDiff {
    private ConfigDiff() {
    }

    /** Sections that differ but take effect only at the next start; the rest of the file still applies. */
    static List<String> restartRequired(GatewayConfig cur, GatewayConfig next) {
        return ReloadPlan.of(cur, next).restartRequiredKeys();
    }

    /** {@code a} with the running tokenizer (a different one needs a restart). */
    static AdmissionConfig withTokenizer(AdmissionConfig a, AdmissionConfig.TokenizerConfig tokenizer) {
        return a.tokenizer().equals(tokenizer) ? a : a.toBuilder().tokenizer(tokenizer).build();
    }
}
