package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.state.PrefillRateFile;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 19: a prefill worker's rate is known before the gateway has measured one: read from the
 * worker's own counters (SGLang's realtime_tokens_total and gpu_execution_seconds_total, over real
 * HTTP polls of its /metrics), or carried over from the previous run in the state file.
 */
class PrefillRatePriorEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 5s, request: 60s}";
    private static final double SIM_RATE = 40_000;
    private PdTestbed bed;

    @TempDir
    Path dir;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    // no calibration: these tests watch a prior arrive in a gateway that has none (PrefillCalibrationEndToEndTest
    // covers the calibrated start)
    private static final String NO_CALIBRATION = "admission: {prefill_rate: {calibration: {on_start: never}}}\n";

    private PdTestbed start(boolean deviceTimer, String extra) throws Exception {
        bed = PdTestbed.start(SimMode.UNIFIED, 0, 1, SimConfig.defaults().withPrefillTokensPerSecond(SIM_RATE)
                .withDecodeStep(Duration.ofMillis(2)).withDeviceTimerMetrics(deviceTimer), TIMEOUTS,
                extra.isEmpty() ? NO_CALIBRATION : extra);
        return bed;
    }

    private AdmissionSnapshot.PrefillRate rate() {
        Map<Worker, AdmissionSnapshot.PrefillRate> rates = bed.gateway.admission().snapshot().prefillRates();
        return rates.values().iterator().next();
    }

    /** Work the gateway does not see: prompts sent straight to the worker, as another client would. */
    private void loadTheWorkerDirectly(SimWorker w, int prompts, int tokens) throws Exception {
        String ids = IntStream.range(0, tokens).mapToObj(i -> String.valueOf(1 + i % 30_000))
                .collect(Collectors.joining(","));
        for (int i = 0; i < prompts; i++) {
            HttpResponse<String> r = bed.http.send(PdTestbed.postRequest(URI.create(w.url() + "/generate"),
                    "{\"input_ids\":[" + i + "," + ids + "],\"sampling_params\":{\"max_new_tokens\":1}}"),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
    }

    @Test
    void aWorkerExportingItsPrefillCountersGivesTheGatewayItsRateBeforeAnyRequestPassedThrough() throws Exception {
        start(true, "");
        assertThat(rate().source()).isEqualTo("guess");
        assertThat(bed.gateway.admission().snapshot().throughputMeasured()).isFalse();

        loadTheWorkerDirectly(bed.cluster.decodeWorkers().get(0), 3, 8_000); // 0.6 s of prefill at 40,000 tokens/s

        assertThat(eventually(Duration.ofSeconds(5), () -> rate().source().equals("telemetry"))).isTrue();
        // the simulator's timer counts the time its prefill really took: on a loaded machine its sleeps
        // overrun, so the rate it reports can only come out lower than configured (31,556 seen in CI), never higher
        assertThat(rate().tokensPerSecond()).isBetween(SIM_RATE * 0.6, SIM_RATE * 1.1);
        assertThat(bed.gateway.admission().snapshot().throughputMeasured()).isTrue();
        HttpResponse<String> admin = bed.http.send(java.net.http.HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + bed.gateway.adminPort() + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString());
        JsonNode state = JSON.readTree(admin.body());
        assertThat(state.path("workers").get(0).path("prefill_rate").path("source").asText()).isEqualTo("telemetry");
    }

    @Test
    void withoutTheDeviceTimerThereIsNoTelemetryPrior() throws Exception {
        start(false, "");
        loadTheWorkerDirectly(bed.cluster.decodeWorkers().get(0), 3, 8_000);
        // two polls of /metrics after the load, still the guess: tokens alone do not make a rate
        Worker w = bed.gateway.workers().all().get(0);
        for (int poll = 0; poll < 2; poll++) {
            long after = System.nanoTime();
            assertThat(eventually(Duration.ofSeconds(5), () -> w.telemetry().fetchedAtNanos() > after)).isTrue();
        }
        assertThat(w.telemetry().lastPollOk()).isTrue();
        assertThat(rate().source()).isEqualTo("guess");
    }

    @Test
    void theRateMeasuredInOneRunIsThePriorOfTheNext() throws Exception {
        Path file = dir.resolve("prefill-rates.json");
        String extra = "admission: {prefill_rate: {state_file: " + file + ", from_telemetry: false, "
                + "calibration: {on_start: never}}}\n";
        carriedOver(file, extra, ConfigOverrides.none());
    }

    /**
     * With no state_file in the configuration (auto): kept in the state directory, here the one
     * systemd's StateDirectory= names ($STATE_DIRECTORY), and read back by the next start.
     */
    @Test
    void byDefaultTheRatesAreKeptInTheStateDirectory() throws Exception {
        Path stateDirectory = dir.resolve("var-lib-sluice");
        Map<String, String> env = Map.of("STATE_DIRECTORY", stateDirectory.toString());
        carriedOver(stateDirectory.resolve("prefill-rates.json"), "admission: {prefill_rate: {from_telemetry: false, "
                + "calibration: {on_start: never}}}\n",
                ConfigOverrides.of(env, java.util.List.of()));
    }

    private void carriedOver(Path file, String extra, ConfigOverrides overrides) throws Exception {
        bed = PdTestbed.start(SimMode.UNIFIED, 0, 1, SimConfig.defaults().withPrefillTokensPerSecond(SIM_RATE)
                .withDecodeStep(Duration.ofMillis(2)).withDeviceTimerMetrics(false), TIMEOUTS, extra, overrides);
        String prompt = "{\"model\":\"sim-model\",\"max_tokens\":2,\"stream\":true,\"prompt\":["
                + IntStream.range(0, 6_000).mapToObj(i -> String.valueOf(1 + i % 30_000))
                .collect(Collectors.joining(",")) + "]}";
        for (int i = 0; i < 2; i++) {
            HttpResponse<String> r = bed.post("/v1/completions", prompt);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> rate().source().equals("measured"))).isTrue();
        double measured = rate().tokensPerSecond();
        String url = bed.cluster.decodeWorkers().get(0).url();
        bed.assertQuiescent();
        bed.gateway.close(); // a stopping gateway writes its measured rates; the worker stays
        Map<String, Double> saved = PrefillRateFile.read(file, Instant.now());
        assertThat(saved).containsOnlyKeys(url);
        assertThat(saved.get(url)).isCloseTo(measured, org.assertj.core.data.Offset.offset(0.1));
        assertThat(Files.readString(file)).contains("\"measured_at\"");

        // the next run, same workers: deadline checks on from its first request
        GatewayServer next = new GatewayServer(ConfigLoader.parse(bed.yaml, "test", overrides)).start();
        bed = PdTestbed.adopt(bed.cluster, next);
        assertThat(next.awaitReady(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        assertThat(rate()).isEqualTo(new AdmissionSnapshot.PrefillRate(saved.get(url), "state_file"));
        assertThat(next.admission().snapshot().throughputMeasured()).isTrue();
    }
}
