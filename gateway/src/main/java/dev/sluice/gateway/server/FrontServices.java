package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.LearnedRatioCounter;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.api.RequestJson;
import dev.sluice.gateway.pd.PdServices;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * What a client connection's handler uses of the running gateway, and
 * nothing else: the live settings, the request parser, the exchange's services, the prompt
 * counters, whether the gateway is draining, and the fleet coordination's state (for /readiness).
 *
 * @param estimator the byte-ratio estimate used when exact counting fails
 */
record FrontServices(Supplier<LiveSettings> live, RequestJson requestJson, PdServices pd, PromptTokenCounter counter,
                     LearnedRatioCounter estimator, BooleanSupplier draining,
                     Supplier<java.util.Optional<dev.sluice.gateway.coordination.CoordinationStatus>> coordination) {
}
