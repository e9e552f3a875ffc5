package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The calibration of the prefill rates at a gateway's first start ({@code admission.prefill_rate.calibration},
 * on by default): no prior, no telemetry, no state file, and still the first burst's hopeless requests are
 * refused at the door, because the gateway timed each prefill worker with its own requests (random words,
 * one token, through the protocol's both halves) before /readiness said yes. A worker that never answers
 * holds readiness only until the calibration's timeout. Real HTTP over loopback to simulated SGLang, vLLM
 * and unified workers.
 */
class PrefillCalibrationEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 5s, request: 60s}";
    private static final double SIM_RATE = 10_000;
    // the default on_start (auto), named so that the testbed leaves it on (PdTestbed.withoutCalibration)
    private static final String FIRST_START = "admission: {prefill_rate: {from_telemetry: false, state_file: none, "
            + "calibration: {on_start: auto}}}\n";
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: queue, pending tokens, windows, in-flight counts back to zero
        }
    }

    private AdmissionSnapshot.PrefillRate rate() {
        return bed.gateway.admission().snapshot().prefillRates().values().iterator().next();
    }

    private static List<RecordedRequest> calibrations(SimWorker w) {
        List<RecordedRequest> out = new ArrayList<>();
        for (RecordedRequest r : w.journal()) {
            if (r.method().equals("POST") && r.header("X-Request-Id").orElse("").startsWith("sluice-calib-")) {
                out.add(r);
            }
        }
        return out;
    }

    private static String prompt(int tokens, int salt) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"stream\":true,\"prompt\":[" + salt + ","
                + IntStream.range(1, tokens).mapToObj(i -> String.valueOf(1 + (i * 7 + salt) % 30_000))
                .collect(Collectors.joining(",")) + "]}";
    }

    private HttpRequest request(String body, long deadlineMs) {
        return HttpRequest.newBuilder(bed.uri("/v1/completions")).header("Content-Type", "application/json")
                .header("X-Sluice-Deadline-Ms", Long.toString(deadlineMs))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    @ParameterizedTest
    @EnumSource(value = SimMode.class, names = {"SGLANG", "VLLM", "UNIFIED"})
    void aFirstStartCalibratesItsPrefillAndRefusesTheFirstBurstsHopelessRequestsAtTheDoor(SimMode mode)
            throws Exception {
        SimConfig sim = SimConfig.defaults().withPrefillTokensPerSecond(SIM_RATE).withDecodeStep(Duration.ofMillis(2))
                .withDeviceTimerMetrics(false);
        bed = mode == SimMode.UNIFIED ? PdTestbed.start(SimMode.UNIFIED, 0, 1, sim, TIMEOUTS, FIRST_START)
                : PdTestbed.start(mode, 1, 1, sim, TIMEOUTS, FIRST_START);
        SimWorker prefill = mode == SimMode.UNIFIED ? bed.cluster.decodeWorkers().get(0)
                : bed.cluster.prefillWorkers().get(0);

        // ready only once calibrated: the rate is there before the first client
        assertThat(rate().source()).isEqualTo("calibrated");
        // the simulator's sleeps overrun on a loaded machine: its rate can come out lower, hardly higher
        assertThat(rate().tokensPerSecond()).isBetween(SIM_RATE * 0.6, SIM_RATE * 1.5);
        // a warm-up, a short and a long prompt, one after the other, of random words (no shared prefix)
        List<RecordedRequest> sent = calibrations(prefill);
        assertThat(sent).hasSize(3);
        assertThat(sent.stream().map(r -> r.body().path("prompt").asText()).map(p -> p.substring(0, Math.min(200,
                p.length()))).distinct())
                .hasSize(3);
        JsonNode admin = JSON.readTree(bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + bed.gateway.adminPort() + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString()).body());
        assertThat(admin.path("workers").findValues("prefill_rate").get(0).path("source").asText())
                .isEqualTo("calibrated");
        // no client counted: nothing in the admission's books
        assertThat(bed.gateway.admission().snapshot().idle()).isTrue();

        List<Long> refusedAfterMs = burst();
        // at the door: without calibration none is (the work-in-flight bound needs more than a second of the first
        // prefill, and the first measured rate needs two prefills); one near the line may be refused at a review
        // after the first prefill ended (the rate measured then, the margin)
        assertThat(refusedAfterMs.stream().filter(ms -> ms < 1_000)).as("refused as they arrive: %s", refusedAfterMs)
                .hasSizeGreaterThanOrEqualTo(3);
        bed.assertQuiescent();
    }

    /** The same first burst with calibration off: no refusal comes within a second of arrival. */
    @Test
    void withoutCalibrationTheSameBurstIsRefusedOnlyLater() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withPrefillTokensPerSecond(SIM_RATE)
                .withDecodeStep(Duration.ofMillis(2)).withDeviceTimerMetrics(false), TIMEOUTS, "admission: "
                + "{prefill_rate: {from_telemetry: false, state_file: none, calibration: {on_start: never}}}\n");
        assertThat(rate().source()).isEqualTo("guess");
        List<Long> refusedAfterMs = burst();
        assertThat(refusedAfterMs).as("no evidence at arrival: %s", refusedAfterMs).allMatch(ms -> ms >= 1_000);
        bed.assertQuiescent();
    }

    /**
     * Six 20,000-token prompts at once (2 s of prefill each at the simulator's rate) with 5 s to their first
     * token: two can make it, the others cannot. Returns how long each refusal took; checks the head is served.
     */
    private List<Long> burst() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> burst = new ArrayList<>();
        long[] sentAt = new long[6];
        long[] endedAt = new long[6];
        for (int i = 0; i < 6; i++) {
            int k = i;
            sentAt[k] = System.nanoTime();
            burst.add(bed.http.sendAsync(request(prompt(20_000, i + 1), 5_000), HttpResponse.BodyHandlers.ofString())
                    .thenApply(r -> {
                        endedAt[k] = System.nanoTime();
                        return r;
                    }));
        }
        List<Long> refusedAfterMs = new ArrayList<>();
        int served = 0;
        for (int i = 0; i < 6; i++) {
            HttpResponse<String> r = burst.get(i).get(60, TimeUnit.SECONDS);
            if (r.statusCode() == 429) {
                // refused for its deadline: at the door or a review (deadline_unreachable, shed: gave way to shorter
                // ones), or at its dispatch check (queue_timeout)
                assertThat(JSON.readTree(r.body()).path("error").path("code").asText()).as(r.body())
                        .isIn("deadline_unreachable", "shed", "queue_timeout");
                refusedAfterMs.add((endedAt[i] - sentAt[i]) / 1_000_000);
            } else {
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                served++;
            }
        }
        assertThat(served).as("the head of the burst is served").isGreaterThanOrEqualTo(1);
        assertThat(refusedAfterMs).as("the tail is refused").hasSizeGreaterThanOrEqualTo(3);
        return refusedAfterMs;
    }

    /** A prefill worker that takes the requests and never answers: readiness comes at the timeout, as before. */
    @Test
    void aWorkerThatNeverAnswersHoldsReadinessOnlyUntilTheTimeoutAndKeepsTodaysBehaviour() throws Exception {
        SimCluster cluster = SimCluster.start(1, 0, 0, SimConfig.defaults().withPrefillTokensPerSecond(SIM_RATE)
                .withDecodeStep(Duration.ofMillis(2)).withDeviceTimerMetrics(false).withHealthGeneration(false),
                SimMode.VLLM);
        SimWorker worker = cluster.prefillWorkers().get(0);
        worker.faults().setStallAll(true); // vLLM's /health still answers: a hung engine behind a live server
        String yaml = "listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\nadmin: {port: 0}\n"
                + "disaggregation: none\nworkers:\n  unified:\n    - url: " + worker.url() + "\n"
                + "health: {interval: 200ms, timeout: 500ms}\ntelemetry: {interval: 200ms}\n"
                + "timeouts: " + TIMEOUTS + "\n"
                + "admission: {prefill_rate: {from_telemetry: false, state_file: none, calibration: {timeout: 2s}}}\n";
        long started = System.nanoTime();
        GatewayServer gateway = new GatewayServer(ConfigLoader.parse(yaml, "test")).start();
        bed = PdTestbed.adopt(cluster, gateway);
        HttpResponse<String> early = bed.http.send(HttpRequest.newBuilder(bed.uri("/readiness")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(early.statusCode()).isEqualTo(503);
        assertThat(gateway.awaitReady(20, TimeUnit.SECONDS)).isTrue();
        long readyMs = (System.nanoTime() - started) / 1_000_000;
        assertThat(readyMs).as("ready at the calibration's timeout, not never").isBetween(1_500L, 10_000L);
        HttpResponse<String> ready = bed.http.send(HttpRequest.newBuilder(bed.uri("/readiness")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(ready.statusCode()).as(ready.body()).isEqualTo(200);
        assertThat(rate().source()).as("today's behaviour: nothing trusted until measured").isEqualTo("guess");
        assertThat(calibrations(worker)).as("the warm-up was sent, and stopped at the timeout").hasSize(1);
        assertThat(worker.awaitIdle(Duration.ofSeconds(10))).as("the stopped request left the worker").isTrue();

        worker.faults().setStallAll(false);
        HttpResponse<String> r = bed.post("/v1/completions", prompt(3_000, 1));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }

    @Test
    void neverSendsNothingAndReadinessDoesNotWait() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withPrefillTokensPerSecond(SIM_RATE)
                .withDeviceTimerMetrics(false), TIMEOUTS, "admission: {prefill_rate: {from_telemetry: false, "
                + "state_file: none, calibration: {on_start: never}}}\n");
        assertThat(rate().source()).isEqualTo("guess");
        assertThat(calibrations(bed.cluster.prefillWorkers().get(0))).isEmpty();
    }
}
