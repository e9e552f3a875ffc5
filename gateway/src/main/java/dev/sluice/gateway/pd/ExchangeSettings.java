package dev.sluice.gateway.pd;

import dev.sluice.gateway.cacheview.PromptTokens;
import dev.sluice.gateway.cacheview.SimTokenizer;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.config.RequestLogging;
import dev.sluice.gateway.config.RetryConfig;
import dev.sluice.gateway.config.TimeoutsConfig;

/**
 * The settings a request runs with, taken from the configuration when it arrives: a reload gives
 * new requests new settings and leaves running ones as they started.
 *
 * @param directDecodeMaxTokens prompts up to this size skip the prefill hop (0: never)
 * @param routingUsesPrefix     a routing policy reads the prompt's prefix (only then is it rendered)
 * @param promptTokens          the prompt's token ids for the KV event view ({@link PromptTokens#NONE}: off)
 */
public record ExchangeSettings(TimeoutsConfig timeouts, HealthConfig.Watchdog watchdog, RetryConfig retries,
                               RequestLogging requestLogging, Drivers drivers, long directDecodeMaxTokens,
                               boolean routingUsesPrefix, long maxResponseBodyBytes, PromptTokens promptTokens) {

    /** The settings of {@code config}; {@code routingUsesPrefix} is the running routing policies' (restart to change). */
    public static ExchangeSettings of(GatewayConfig config, boolean routingUsesPrefix) {
        return of(config, routingUsesPrefix, PromptTokens.NONE);
    }

    /**
     * As {@link #of(GatewayConfig, boolean)}, with the model's tokenizer loaded at start
     * ({@code routing.kv_events.tokenizer: hf}; {@link PromptTokens#NONE} when not loaded).
     */
    public static ExchangeSettings of(GatewayConfig config, boolean routingUsesPrefix, PromptTokens modelTokens) {
        return new ExchangeSettings(config.timeouts(), config.health().watchdog(), config.retries(),
                config.requestLogging(), Drivers.of(config.disaggregation()), config.routing().directDecodeMaxTokens(),
                routingUsesPrefix, config.http().maxResponseBodyBytes(), promptTokens(config, routingUsesPrefix, modelTokens));
    }

    private static PromptTokens promptTokens(GatewayConfig config, boolean routingUsesPrefix, PromptTokens model) {
        return config.routing().kvEvents().filter(kv -> routingUsesPrefix).map(kv -> switch (kv.tokenizer()) {
            case SIM -> (PromptTokens) new SimTokenizer();
            case HF -> model;
        }).orElse(PromptTokens.NONE);
    }

    /** Whether an attempt's prefill is seen to end: always in PD, else only for a stream (a whole answer shows nothing). */
    boolean prefillEndSeen(boolean stream) {
        return drivers.disaggregated() || stream;
    }
}
