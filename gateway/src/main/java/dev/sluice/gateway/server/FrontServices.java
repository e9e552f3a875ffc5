package dev.sluice.gateway.server;

import dev.sluice.gateway.api.RequestJson;
import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.pd.PdServices;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * What a client connection's handler uses of the running gateway, and nothing else: the live
 * settings (the gateway-wide ones: the default pool's), the request parser, the model pools (each
 * request's own exchange services, prompt counters and settings), whether the gateway is draining,
 * the fleet coordination's state (for /readiness), and the gateway's metrics (a request refused
 * before its pool is known is counted there, without a pool).
 */
record FrontServices(Supplier<LiveSettings> live, RequestJson requestJson, Pools pools, BooleanSupplier draining,
                     Supplier<Optional<CoordinationStatus>> coordination, GatewayMetrics metrics) {

    /** The default pool's exchange services: the tracing and recent errors every pool shares. */
    PdServices pd() {
        return pools.defaultPool().pd;
    }
}
