package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.RequestClassifier;
import dev.sluice.gateway.cacheview.PromptTokens;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.pd.ExchangeSettings;

/**
 * The settings new requests are served with, swapped whole by a reload (one volatile reference):
 * a request reads one snapshot, so it never sees half of a reload.
 */
record LiveSettings(GatewayConfig config, RequestClassifier classifier, ExchangeSettings exchange) {

    static LiveSettings of(GatewayConfig config, boolean routingUsesPrefix, PromptTokens modelTokens) {
        return new LiveSettings(config, new RequestClassifier(config.admission()),
                ExchangeSettings.of(config, routingUsesPrefix, modelTokens));
    }
}
