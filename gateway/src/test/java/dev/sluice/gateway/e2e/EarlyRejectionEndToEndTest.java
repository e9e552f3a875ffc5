package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Rejection as soon as it is knowable ({@code admission.prefill_rate.early_rejection}): with no prior
 * and nothing measured, a worker busy for T seconds with the tokens of its busy period still in prefill
 * computes fewer than those tokens per T; a newcomer whose deadline is out of reach even at that bound
 * is refused at the door (429 deadline_unreachable) while the first prefill still runs, seconds before
 * the rate is measured; one within reach is served. With the key off, nothing refuses for a deadline
 * until a rate is known. Real HTTP through the gateway to a simulated SGLang worker at 10,000 tokens/s.
 */
class EarlyRejectionEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 5s, request: 60s}";
    private static final double SIM_RATE = 10_000;
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: queue, pending tokens, windows, in-flight counts back to zero
        }
    }

    private void start(boolean early) throws Exception {
        bed = PdTestbed.start(SimMode.UNIFIED, 0, 1, SimConfig.defaults().withPrefillTokensPerSecond(SIM_RATE)
                        .withDecodeStep(Duration.ofMillis(2)).withDeviceTimerMetrics(false), TIMEOUTS,
                // no calibration: this is the first burst of a gateway that has no evidence but the work in flight
                "admission: {prefill_rate: {from_telemetry: false, state_file: none, early_rejection: " + early
                        + ", calibration: {on_start: never}}}\n");
    }

    private static String prompt(int tokens, int salt) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"stream\":true,\"prompt\":[" + salt + ","
                + IntStream.range(1, tokens).mapToObj(i -> String.valueOf(1 + i % 30_000))
                .collect(Collectors.joining(",")) + "]}";
    }

    private HttpRequest request(String body, long deadlineMs) {
        return HttpRequest.newBuilder(bed.uri("/v1/completions")).header("Content-Type", "application/json")
                .header("X-Sluice-Deadline-Ms", Long.toString(deadlineMs))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private String source() {
        return bed.gateway.admission().snapshot().prefillRates().values().stream()
                .map(AdmissionSnapshot.PrefillRate::source).findFirst().orElseThrow();
    }

    /** A 30,000-token prompt (3 s of prefill) running for 1.5 s: the first prefill of the run, nothing measured. */
    private CompletableFuture<HttpResponse<String>> firstPrefillUnderWay() throws Exception {
        CompletableFuture<HttpResponse<String>> first = bed.http.sendAsync(request(prompt(30_000, 1), 30_000),
                HttpResponse.BodyHandlers.ofString());
        Thread.sleep(1_500);
        assertThat(first).isNotDone();
        assertThat(source()).isEqualTo("guess");
        return first;
    }

    /**
     * After 1.5 s busy on 30,000 tokens the worker is below 30,000 tokens/s (0.5 s allowed for its start): a
     * second 30,000-token prompt needs at least 1 s plus the 1 s margin, past its 1.5 s deadline.
     */
    @Test
    void withoutAPriorARequestOutOfReachEvenAtTheBoundIsRefusedAtTheDoorWhileTheFirstPrefillRuns() throws Exception {
        start(true);
        CompletableFuture<HttpResponse<String>> first = firstPrefillUnderWay();

        long sent = System.nanoTime();
        HttpResponse<String> hopeless = bed.http.send(request(prompt(30_000, 2), 1_500), HttpResponse.BodyHandlers.ofString());
        long tookMs = (System.nanoTime() - sent) / 1_000_000;
        assertThat(hopeless.statusCode()).as(hopeless.body()).isEqualTo(429);
        assertThat(JSON.readTree(hopeless.body()).path("error").path("code").asText()).isEqualTo("deadline_unreachable");
        assertThat(hopeless.headers().firstValue("X-Sluice-Reject-Reason")).hasValue("deadline_unreachable");
        assertThat(tookMs).as("refused at arrival, not at its deadline").isLessThan(1_000);
        assertThat(source()).as("still nothing measured").isEqualTo("guess");

        // within reach of the bound: admitted and served
        HttpResponse<String> reachable = bed.http.send(request(prompt(5_000, 3), 20_000), HttpResponse.BodyHandlers.ofString());
        assertThat(reachable.statusCode()).as(reachable.body()).isEqualTo(200);
        assertThat(first.get().statusCode()).isEqualTo(200);
        bed.assertQuiescent();
    }

    @Test
    void withTheKeyOffNothingIsRefusedForItsDeadlineBeforeARateIsKnown() throws Exception {
        start(false);
        CompletableFuture<HttpResponse<String>> first = firstPrefillUnderWay();

        long sent = System.nanoTime();
        HttpResponse<String> r = bed.http.send(request(prompt(30_000, 2), 1_500), HttpResponse.BodyHandlers.ofString());
        long tookMs = (System.nanoTime() - sent) / 1_000_000;
        boolean refusedAtTheDoor = r.statusCode() == 429 && tookMs < 1_000
                && r.body().contains("deadline_unreachable");
        assertThat(refusedAtTheDoor).as("%d after %d ms: %s", r.statusCode(), tookMs, r.body()).isFalse();
        assertThat(first.get().statusCode()).isEqualTo(200);
        bed.assertQuiescent();
    }
}
