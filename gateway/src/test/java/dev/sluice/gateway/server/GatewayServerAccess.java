package dev.sluice.gateway.server;

import dev.sluice.gateway.pd.PdContext;

/** Test access to what a running gateway hands each exchange (for benchmarks that drive the relay path directly). */
public final class GatewayServerAccess {
    private GatewayServerAccess() {
    }

    public static PdContext pdContext(GatewayServer server) {
        return server.pdContext();
    }
}
