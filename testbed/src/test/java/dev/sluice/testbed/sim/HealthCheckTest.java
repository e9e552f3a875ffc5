package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * SGLang's health check (http_server.health_generate): {@code /health} is {@code /health_generate}
 * unless SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0; it polls once a second for any output and gives
 * up with 503 after HEALTH_CHECK_TIMEOUT. vLLM's {@code /health} is instant.
 */
class HealthCheckTest {
    private static final long ONE_POLL = TimeUnit.MILLISECONDS.toNanos(900);
    private SimCluster cluster;
    private final SimClient client = new SimClient();

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private HttpResponse<String> get(SimWorker w, String path) throws Exception {
        return client.http.send(HttpRequest.newBuilder(URI.create(w.url() + path)).timeout(Duration.ofSeconds(15))
                .GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Status and elapsed nanoseconds of one GET. */
    private record Timed(int status, long nanos) {
    }

    private Timed timed(SimWorker w, String path) throws Exception {
        long t = System.nanoTime();
        int status = get(w, path).statusCode();
        return new Timed(status, System.nanoTime() - t);
    }

    @Test
    void healthGeneratesByDefaultAndAnswersAtTheFirstPoll() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults());
        for (SimWorker w : cluster.workers()) {
            Timed health = timed(w, "/health");
            assertThat(health.status()).as(w + " /health").isEqualTo(200);
            assertThat(health.nanos()).as("/health took >= 900 ms (first poll after a one-second sleep)")
                    .isGreaterThanOrEqualTo(ONE_POLL).isLessThan(TimeUnit.SECONDS.toNanos(3));
            Timed generate = timed(w, "/health_generate");
            assertThat(generate.status()).isEqualTo(200);
            assertThat(generate.nanos()).isGreaterThanOrEqualTo(ONE_POLL);
        }
    }

    @Test
    void withoutGenerationHealthIsInstantButHealthGenerateStillGenerates() throws Exception {
        cluster = SimCluster.start(0, 1, 0, SimConfig.defaults().withHealthGeneration(false), SimMode.UNIFIED);
        UnifiedServer u = cluster.unified().get(0);
        Timed health = timed(u, "/health");
        assertThat(health.status()).isEqualTo(200);
        assertThat(health.nanos()).as("fast path").isLessThan(ONE_POLL);
        Timed generate = timed(u, "/health_generate");
        assertThat(generate.status()).isEqualTo(200);
        assertThat(generate.nanos()).isGreaterThanOrEqualTo(ONE_POLL);
    }

    @Test
    void aStalledWorkerAnswers503AfterTheTimeoutOnBothRoutes() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthCheckTimeout(Duration.ofSeconds(2)));
        DecodeServer decode = cluster.decodes().get(0);
        PrefillServer prefill = cluster.prefills().get(0);
        decode.faults().setStallAfterTokens(0);
        Timed health = timed(decode, "/health");
        assertThat(health.status()).isEqualTo(503);
        assertThat(health.nanos()).as("polled until the 2 s timeout").isGreaterThanOrEqualTo(
                TimeUnit.MILLISECONDS.toNanos(1900)).isLessThan(TimeUnit.SECONDS.toNanos(4));
        prefill.faults().setStallAll(true);
        Timed generate = timed(prefill, "/health_generate");
        assertThat(generate.status()).isEqualTo(503);
        assertThat(generate.nanos()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(1900));
    }

    @Test
    void anotherRequestsOutputCountsWhenTheChecksOwnTokenNeverComes() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(100))
                .withHealthCheckTimeout(Duration.ofSeconds(3)));
        DecodeServer decode = cluster.decodes().get(0);
        PrefillServer prefill = cluster.prefills().get(0);
        // the simulated check's own generation counts as stalled (a stall knob is set), but a stream
        // with fewer tokens than the stall point keeps producing output: SGLang's check passes on it
        decode.faults().setStallAfterTokens(1000);
        var body = pd("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":40}}", prefill, "busy", nextRoom());
        client.post(prefill, "/generate", body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        Timed health = timed(decode, "/health");
        assertThat(health.status()).as("another request's tokens count").isEqualTo(200);
        assertThat(health.nanos()).isGreaterThanOrEqualTo(ONE_POLL).isLessThan(TimeUnit.MILLISECONDS.toNanos(2500));
        assertThat(d.get(15, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        Timed alone = timed(decode, "/health");
        assertThat(alone.status()).as("nothing else runs: no output at all").isEqualTo(503);
        assertThat(alone.nanos()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(2900));
    }

    @Test
    void healthStatusAndFailStatusStillOverride() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults());
        DecodeServer decode = cluster.decodes().get(0);
        decode.faults().setHealthStatus(503);
        Timed health = timed(decode, "/health");
        assertThat(health.status()).isEqualTo(503);
        assertThat(health.nanos()).isLessThan(ONE_POLL);
        decode.faults().reset().setFailStatus(502);
        HttpResponse<String> failed = get(decode, "/health_generate");
        assertThat(failed.statusCode()).isEqualTo(502);
        assertThat(json(failed.body()).get("code").asInt()).isEqualTo(502);
    }

    @Test
    void vllmHealthIsInstant() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults(), SimMode.VLLM);
        Timed health = timed(cluster.vllmDecodes().get(0), "/health");
        assertThat(health.status()).isEqualTo(200);
        assertThat(health.nanos()).isLessThan(ONE_POLL);
    }
}
