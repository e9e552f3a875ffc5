package dev.sluice.gateway.server;

import dev.sluice.gateway.pd.ExchangeSettings;
import dev.sluice.gateway.pd.PdServices;

/** Test access to what a running gateway hands each exchange (for benchmarks that drive the relay path directly). */
public final class GatewayServerAccess {
    private GatewayServerAccess() {
    }

    public static PdServices pdServices(GatewayServer server) {
        return server.pdServices();
    }

    public static ExchangeSettings exchangeSettings(GatewayServer server) {
        return server.liveSettings().exchange();
    }
}
