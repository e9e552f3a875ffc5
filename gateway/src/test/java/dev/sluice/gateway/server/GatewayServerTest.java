package dev.sluice.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import org.junit.jupiter.api.Test;

/** The composition root on its own: what works before it starts. */
class GatewayServerTest {
    private static final String BASE = """
            workers:
              prefill: [{url: "http://127.0.0.1:1"}]
              decode: [{url: "http://127.0.0.1:2"}]
            admission: {max_queued_requests: 8}
            """;

    /**
     * The review found that apply() before start() threw: on the old code (09c578c) this test fails
     * with a NullPointerException in WorkerReconciler.reconcile (the reconciler was built in start).
     */
    @Test
    void aReloadBeforeStartPutsItsLiveSettingsInForce() {
        try (GatewayServer gateway = new GatewayServer(ConfigLoader.parse(BASE, "test"))) {
            GatewayConfig next = ConfigLoader.parse(BASE.replace("max_queued_requests: 8", "max_queued_requests: 4")
                    .replace("decode: [{url: \"http://127.0.0.1:2\"}]",
                            "decode: [{url: \"http://127.0.0.1:2\"}, {url: \"http://127.0.0.1:3\"}]")
                    + "health: {interval: 3s}\n", "test");
            AppliedChanges applied = gateway.apply(next);
            assertThat(applied.applied()).contains("admission", "workers", "health");
            assertThat(applied.restartRequired()).isEmpty();
            assertThat(gateway.config().admission().maxQueuedRequests()).isEqualTo(4);
            assertThat(gateway.admission().config().maxQueuedRequests()).isEqualTo(4);
            assertThat(gateway.workers().decode()).hasSize(2);
            assertThat(gateway.liveSettings().exchange().timeouts()).isEqualTo(next.timeouts());
        }
    }
}
