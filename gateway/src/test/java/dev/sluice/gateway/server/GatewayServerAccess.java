package dev.sluice.gateway.server;

import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.pd.ExchangeSettings;
import dev.sluice.gateway.pd.PdServices;
import io.netty.util.concurrent.EventExecutor;

/**
 * Test access to what a running gateway hands each exchange (for benchmarks that drive the relay path
 * directly), its control loop and its periodic tasks.
 */
public final class GatewayServerAccess {
    private GatewayServerAccess() {
    }

    public static PdServices pdServices(GatewayServer server) {
        return server.pdServices();
    }

    public static ExchangeSettings exchangeSettings(GatewayServer server) {
        return server.liveSettings().exchange();
    }

    public static EventExecutor controlLoop(GatewayServer server) {
        return server.controlLoop();
    }

    public static BackgroundTasks backgroundTasks(GatewayServer server) {
        return server.backgroundTasks();
    }
}
