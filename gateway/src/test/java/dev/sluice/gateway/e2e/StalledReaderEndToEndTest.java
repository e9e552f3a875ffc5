package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.SimConfig;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A client that stops reading a stream holds its decode back (backpressure): when idle_stream
 * passes, that is the client's doing, ended as {@code slow_client}, never counted as a stall of
 * the worker (which would eject healthy workers behind slow readers).
 */
class StalledReaderEndToEndTest {
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose();
        }
    }

    @Test
    void aClientThatStopsReadingEndsAsSlowClientAndTheDecodeStaysHealthy() throws Exception {
        // two decodes: one failure would be enough to eject the one behind the stalled reader, were it counted
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ZERO),
                "{connect: 2s, first_token: 20s, idle_stream: 1s}",
                // active checks get 3 s: a decode streaming at full speed (no step) shares the simulator's loop
                // with its /health, and a loaded machine made 500 ms checks fail (an ejection this test is not about)
                "health: {interval: 200ms, timeout: 3s, passive: {consecutive_failures: 1}}\n");
        try (RawHttpClient client = new RawHttpClient(bed.port(), 16 * 1024)) {
            client.post("/v1/completions", "{\"model\":\"sim-model\",\"prompt\":\"go\",\"stream\":true,\"max_tokens\":100000}");
            client.readUntil("data:"); // the stream started; from now on the client reads nothing
            assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> {
                try {
                    return bed.metric("sluice_aborts_total{cause=\"slow_client\"}") == 1.0;
                } catch (Exception e) {
                    return false;
                }
            })).isTrue();
        }
        assertThat(bed.gateway.workers().decode()).allMatch(w -> w.state() == WorkerState.HEALTHY);
        assertThat(bed.metric("sluice_aborts_total{cause=\"stall\"}")).isZero();
        for (var w : bed.gateway.workers().decode()) {
            assertThat(bed.metric("sluice_worker_ejections_total{reason=\"stall\",role=\"decode\",worker=\"" + w.name()
                    + "\"}")).isZero();
        }
    }
}
