package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What every discovery mechanism's end-to-end test checks the same way, through the gateway and the
 * simulated decodes: a worker that appeared gets traffic, and one that left while streaming is drained
 * (its stream finishes, nothing new reaches it, then it is retired).
 */
final class DiscoveredWorkerChecks {
    private DiscoveredWorkerChecks() {
    }

    static int generations(SimWorker d) {
        return (int) d.journal().stream().filter(r -> r.path().equals("/generate")).count();
    }

    static String stream(int tokens) {
        return "{\"text\":\"hello\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":" + tokens + "}}";
    }

    /** Sends short streams until one reaches {@code w}: whether it did within {@code within}. */
    static boolean getsTraffic(PdTestbed bed, SimWorker w, Duration within) throws InterruptedException {
        return eventually(within, () -> {
            try {
                bed.post("/generate", stream(2));
            } catch (Exception e) {
                return false;
            }
            return generations(w) > 0;
        });
    }

    /** A long stream running on {@code w} (a few tries: routing picks the decode), or null when none got there. */
    static CompletableFuture<HttpResponse<String>> streamRunningOn(PdTestbed bed, SimWorker w) throws Exception {
        for (int i = 0; i < 4 && w.stats().running() == 0; i++) {
            CompletableFuture<HttpResponse<String>> f = bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"),
                    stream(60)), HttpResponse.BodyHandlers.ofString());
            eventually(Duration.ofSeconds(2), () -> w.stats().running() > 0 || f.isDone());
            if (w.stats().running() > 0) {
                return f;
            }
            f.get();
        }
        return null;
    }

    /**
     * After {@code w} left its source while {@code running} streamed from it: it is draining, new requests
     * are served elsewhere, the stream finishes whole, and the worker is retired, one decode left.
     */
    static void drainedThenRetired(PdTestbed bed, GatewayServer gateway, SimWorker w,
                                   CompletableFuture<HttpResponse<String>> running) throws Exception {
        assertThat(eventually(Duration.ofSeconds(5), () -> gateway.drainingWorkers() == 1)).isTrue();
        int atRemoval = generations(w);
        for (int i = 0; i < 4; i++) {
            assertThat(bed.post("/generate", stream(2)).statusCode()).isEqualTo(200);
        }
        HttpResponse<String> finished = running.get(30, TimeUnit.SECONDS);
        assertThat(finished.statusCode()).isEqualTo(200);
        assertThat(finished.body()).contains("[DONE]").doesNotContain("\"error\"");
        assertThat(generations(w)).as("nothing new reached the leaving worker").isEqualTo(atRemoval);
        assertThat(eventually(Duration.ofSeconds(5), () -> gateway.drainingWorkers() == 0
                && gateway.workers().decode().size() == 1)).isTrue();
    }
}
