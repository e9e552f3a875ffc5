package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A 1P1D pair whose KV transfers hang while both workers' health checks pass: the "silent" stall
 * (the simulator's kvStall; real SGLang's health check takes the fake bootstrap path and never
 * touches the transfer, see docs/simulator-sources.md). With no other pair to go to, the gateway
 * says so and fails fast (health.stall_panic): the pair is suspect in metrics, state and readiness,
 * new requests get a 503 with Retry-After at once while one probe at a time tests the pair, and
 * service resumes once a probe succeeds. Default health and watchdog settings.
 */
class SilentStallEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String STREAM = "{\"model\":\"sim-model\",\"max_tokens\":4,\"stream\":true,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";

    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private Worker gatewayDecode() {
        return bed.gateway.workers().decode().get(0);
    }

    private HttpResponse<String> ask() throws Exception {
        return bed.post("/v1/chat/completions", STREAM);
    }

    @Test
    void theOnlyPairStallingSilentlyIsSuspectAndRefusedFastUntilAProbeSucceeds() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5)),
                "{first_token: 60s, request: 120s}", "");
        DecodeServer decode = bed.cluster.decodes().get(0);
        assertThat(ask().statusCode()).isEqualTo(200);

        decode.faults().setKvStall(true);
        // the first request meets the stall: the watchdog catches it (health.watchdog.prefill_floor, 5 s)
        HttpResponse<String> first = ask();
        assertThat(first.statusCode()).isEqualTo(504);
        Worker d = gatewayDecode();
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);
        assertThat(bed.gateway.workers().prefill().get(0).state()).as("nobody can tell whose stall it is")
                .isEqualTo(WorkerState.SUSPECT);
        assertThat(bed.metric("sluice_worker_state{role=\"decode\",state=\"suspect\",worker=\"" + d.name() + "\"}"))
                .isEqualTo(1.0);
        HttpResponse<String> readiness = bed.get("/readiness");
        assertThat(readiness.statusCode()).isEqualTo(503);
        JsonNode workers = JSON.readTree(readiness.body()).path("workers");
        assertThat(workers.findValuesAsText("state")).containsOnly("suspect");
        assertThat(workers.findValuesAsText("reason")).allMatch(r -> r.contains("one probe request at a time"));

        // one request takes the probe (it waits at most health.stall_panic.probe_timeout); every other
        // new request is refused at once
        CompletableFuture<HttpResponse<String>> probe = bed.http.sendAsync(
                PdTestbed.postRequest(bed.uri("/v1/chat/completions"), STREAM), HttpResponse.BodyHandlers.ofString());
        assertThat(PdTestbed.eventually(Duration.ofSeconds(2), () -> d.inflight() == 1)).isTrue();
        for (int i = 0; i < 5; i++) {
            long start = System.nanoTime();
            HttpResponse<String> r = ask();
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(ms).as("refused at once, not after a watchdog").isLessThan(1000);
            assertThat(r.headers().firstValue("Retry-After")).isPresent();
            assertThat(r.body()).contains("\"no_capacity\"").contains("health.stall_panic");
        }
        assertThat(probe.get().statusCode()).as("the probe met the stall too").isEqualTo(504);

        // the decode heals: a probe succeeds and traffic resumes within 10 s
        decode.faults().setKvStall(false);
        long healed = System.nanoTime();
        boolean served = PdTestbed.eventually(Duration.ofSeconds(10), () -> {
            try {
                return ask().statusCode() == 200;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(served).as("served again %d ms after healing", (System.nanoTime() - healed) / 1_000_000)
                .isTrue();
        assertThat(PdTestbed.eventually(Duration.ofSeconds(2), () -> d.state() == WorkerState.HEALTHY)).isTrue();
        assertThat(bed.get("/readiness").statusCode()).isEqualTo(200);
        for (int i = 0; i < 3; i++) {
            assertThat(ask().statusCode()).isEqualTo(200);
        }
    }
}
