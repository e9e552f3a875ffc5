package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A sick worker, tried from outside: a decode that takes requests and goes silent, a prefill that
 * answers 503 or 500. The gateway must stop feeding it, move the waiting requests elsewhere
 * without the client noticing (a retry with a fresh rid and room, both halves of the failed
 * attempt aborted), say so in its state, metrics and readiness, and take it back after a trial.
 */
class WorkerHealthEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String HEALTH = "health: {interval: 200ms, timeout: 500ms, generate_interval: 0s,"
            + " passive: {consecutive_failures: 2, base_ejection: 1s, half_open_requests: 2},"
            + " watchdog: {prefill_floor: 2s, first_token_after_prefill: 500ms}}\n"
            + "retries: {max_retries: 2, backoff_base: 10ms}\n";
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 2s, request: 60s}";
    private static final String STREAM = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":8,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private static final String PLAIN = "{\"model\":\"sim-model\",\"max_tokens\":8,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";

    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private PdTestbed start(int prefills, int decodes) throws Exception {
        bed = PdTestbed.start(prefills, decodes, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withKvWait(Duration.ofSeconds(30)), TIMEOUTS, HEALTH);
        return bed;
    }

    private Worker gatewayWorker(SimWorker sim) {
        return bed.gateway.workers().all().stream().filter(w -> w.url().equals(sim.url())).findFirst().orElseThrow();
    }

    private static List<String> generationRids(SimWorker w) {
        List<String> rids = new ArrayList<>();
        for (RecordedRequest r : w.journal()) {
            if (r.method().equals("POST") && r.path().startsWith("/v1/") && r.body() != null) {
                rids.add(r.body().path("rid").asText());
            }
        }
        return rids;
    }

    @Test
    void aDecodeThatGoesSilentIsEjectedItsRequestsMoveAndItComesBackAfterATrial() throws Exception {
        start(1, 2);
        DecodeServer stuck = bed.cluster.decodes().get(0);
        DecodeServer good = bed.cluster.decodes().get(1);
        stuck.faults().setStallAfterTokens(0); // takes the KV, then never emits a token; /health stays 200

        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            calls.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/v1/chat/completions"), STREAM),
                    HttpResponse.BodyHandlers.ofString()));
        }
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            HttpResponse<String> r = c.get();
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("[DONE]").doesNotContain("\"error\"");
        }
        Worker w = gatewayWorker(stuck);
        assertThat(w.state()).isEqualTo(WorkerState.EJECTED);
        assertThat(w.status().reason()).contains("stall");
        // every attempt the stuck decode got was aborted on it, and its retry went to the good one
        List<String> stuckRids = generationRids(stuck);
        assertThat(stuckRids).isNotEmpty();
        assertThat(eventually(Duration.ofSeconds(5), () -> stuckRids.stream().allMatch(rid ->
                stuck.aborts().stream().anyMatch(a -> a.rid().equals(rid))))).isTrue();
        assertThat(generationRids(good)).hasSize(6).doesNotContainAnyElementsOf(stuckRids);
        // the first ones are caught by the watchdog; once it is ejected, the rest waiting on it move at once
        double stalls = bed.metric("sluice_aborts_total{cause=\"stall\"}");
        assertThat(stalls).isGreaterThanOrEqualTo(2);
        assertThat(stalls + bed.metric("sluice_aborts_total{cause=\"worker_ejected\"}")).isEqualTo(stuckRids.size());
        assertThat(bed.metric("sluice_retries_total{reason=\"stall\"}")
                + bed.metric("sluice_retries_total{reason=\"worker_ejected\"}")).isEqualTo(stuckRids.size());
        String role = "role=\"decode\",state=\"ejected\",worker=\"" + w.name() + "\"";
        assertThat(bed.metric("sluice_worker_state{" + role + "}")).isEqualTo(1.0);
        assertThat(bed.metric("sluice_worker_ejections_total{reason=\"stall\",role=\"decode\",worker=\""
                + w.name() + "\"}")).isEqualTo(1.0);
        JsonNode state = JSON.readTree(bed.get("/readiness").body());
        assertThat(state.path("status").asText()).isEqualTo("ready"); // the other decode serves
        int stuckBefore = stuckRids.size();

        // while it is out, nothing new reaches it
        for (int i = 0; i < 4; i++) {
            assertThat(bed.post("/v1/chat/completions", STREAM).statusCode()).isEqualTo(200);
        }
        if (w.state() == WorkerState.EJECTED) {
            assertThat(generationRids(stuck)).hasSize(stuckBefore);
        }

        // it recovers: after its back-off a half-open trial, and healthy once the trials succeed
        stuck.faults().reset();
        assertThat(eventually(Duration.ofSeconds(10), () -> w.state() != WorkerState.EJECTED)).isTrue();
        assertThat(eventually(Duration.ofSeconds(20), () -> {
            try {
                bed.post("/v1/chat/completions", STREAM);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return w.state() == WorkerState.HEALTHY;
        })).as("back to healthy after its half-open trial: %s", w.status()).isTrue();
        assertThat(generationRids(stuck).size()).isGreaterThan(stuckBefore);
    }

    @Test
    void aPrefillAnswering503IsRetriedOnAnotherPairWithAFreshRidAndRoom() throws Exception {
        start(2, 1);
        PrefillServer busy = bed.cluster.prefills().get(0);
        PrefillServer fine = bed.cluster.prefills().get(1);
        busy.faults().setFailStatus(503);
        for (int i = 0; i < 4; i++) {
            HttpResponse<String> r = bed.post("/v1/chat/completions", PLAIN);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).path("choices").get(0).path("message").path("content").asText())
                    .isNotEmpty();
        }
        double retries = bed.metric("sluice_retries_total{reason=\"worker_busy\"}");
        assertThat(retries).isGreaterThanOrEqualTo(1);
        // the same request on two pairs: different rids, different rooms, and the decode saw only the retry's
        List<JsonNode> busyBodies = bodies(busy);
        assertThat(busyBodies).isNotEmpty();
        List<JsonNode> decodeBodies = bodies(bed.decode());
        for (JsonNode failed : busyBodies) {
            String rid = failed.path("rid").asText();
            long room = failed.path("bootstrap_room").asLong();
            assertThat(bodies(fine)).noneMatch(b -> b.path("rid").asText().equals(rid)
                    || b.path("bootstrap_room").asLong() == room);
            // the decode copy of the failed attempt was aborted
            if (decodeBodies.stream().anyMatch(b -> b.path("rid").asText().equals(rid))) {
                assertThat(eventually(Duration.ofSeconds(5), () -> bed.decode().aborts().stream()
                        .anyMatch(a -> a.rid().equals(rid)))).isTrue();
            }
        }
        assertThat(bed.gateway.admission().snapshot().idle()).isTrue();
    }

    @Test
    void a500IsNotRetriedButCountsAndRepeatedOnesEjectThePrefill() throws Exception {
        start(2, 1);
        PrefillServer broken = bed.cluster.prefills().get(0);
        broken.faults().setFailStatus(500);
        int failedRequests = 0;
        for (int i = 0; i < 8; i++) {
            HttpResponse<String> r = bed.post("/v1/chat/completions", PLAIN);
            if (r.statusCode() == 500) {
                failedRequests++;
                assertThat(JSON.readTree(r.body()).path("error").path("message").asText()).contains("answered 500");
            } else {
                assertThat(r.statusCode()).isEqualTo(200);
            }
        }
        assertThat(failedRequests).isEqualTo(2); // consecutive_failures: 2, then it was out of rotation
        assertThat(gatewayWorker(broken).state()).isEqualTo(WorkerState.EJECTED);
        assertThat(bed.metric("sluice_retries_total{reason=\"worker_busy\"}")).isZero();
    }

    @Test
    void noRetryOnceTheClientHasBytes() throws Exception {
        start(1, 2);
        bed.cluster.decodes().forEach(d -> d.faults().setFailAfterTokens(2));
        HttpResponse<String> r = bed.post("/v1/chat/completions", STREAM);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"error\"").contains("[DONE]");
        assertThat(bed.metric("sluice_retries_total{reason=\"worker_busy\"}")
                + bed.metric("sluice_retries_total{reason=\"stall\"}")).isZero();
        assertThat(bed.cluster.decodes().stream().mapToInt(d -> generationRids(d).size()).sum()).isEqualTo(1);
    }

    @Test
    void aDecodeWhoseKvCacheIsNearlyFullTakesNoNewStreamsUntilItDrops() throws Exception {
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                        .withKvWait(Duration.ofSeconds(30)), TIMEOUTS,
                "health: {interval: 200ms, timeout: 500ms, generate_interval: 0s, decode_max_kv_usage: 0.01}\n"
                        + "routing: {decode: {policy: round_robin}}\n");
        DecodeServer full = bed.cluster.decodes().get(0);
        DecodeServer other = bed.cluster.decodes().get(1);
        Worker w = gatewayWorker(full);
        // ~12K prompt tokens held by one long stream: more than 1% of the simulated decode's 1M-token KV pool
        String big = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":100000,\"messages\":[{\"role\":\"user\","
                + "\"content\":\"" + "abcd ".repeat(10_000) + "\"}]}";
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/v1/chat/completions", big);
            client.readUntil("chat.completion.chunk");
            assertThat(generationRids(full)).hasSize(1);
            assertThat(eventually(Duration.ofSeconds(5), () -> w.state() == WorkerState.DEGRADED))
                    .as("degraded by its own sglang:token_usage: %s", w.status()).isTrue();
            assertThat(w.status().reason()).contains("KV token usage");
            for (int i = 0; i < 4; i++) {
                assertThat(bed.post("/v1/chat/completions", STREAM).statusCode()).isEqualTo(200);
            }
            assertThat(generationRids(full)).hasSize(1); // nothing new while it is full
            assertThat(generationRids(other)).hasSize(4);
            assertThat(bed.get("/readiness").statusCode()).isEqualTo(200); // degraded is not gone
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> w.state() == WorkerState.HEALTHY))
                .as("healthy again once its KV drops: %s", w.status()).isTrue();
    }

    private static List<JsonNode> bodies(SimWorker w) {
        List<JsonNode> out = new ArrayList<>();
        for (RecordedRequest r : w.journal()) {
            if (r.method().equals("POST") && r.path().startsWith("/v1/") && r.body() != null) {
                out.add(r.body());
            }
        }
        return out;
    }
}
