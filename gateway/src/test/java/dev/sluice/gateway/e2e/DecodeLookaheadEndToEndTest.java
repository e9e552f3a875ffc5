package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A decode of two data-parallel ranks that runs one request a rank (simulated SGLang
 * {@code --max-running-requests 2 --dp-size 2}) behind the gateway's decode window: above the ranks' caps,
 * the next streams are prefilled and their KV transferred while the ranks are busy, and wait in the decode;
 * at the caps, the gateway says what that costs and what to set. All over real HTTP on loopback.
 */
class DecodeLookaheadEndToEndTest {
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 10s}";
    private static final ObjectMapper JSON = new ObjectMapper();
    /** 40 tokens 50 ms apart: 2 s a stream, so every stream of the burst is dispatched before one ends. */
    private static final SimConfig ONE_A_RANK = SimConfig.defaults().withDpSize(2).withDecodeMaxBatch(2)
            .withDecodeStep(Duration.ofMillis(50));

    @Test
    void aWindowAboveTheRanksCapsHasTheNextStreamsWaitInTheDecodeWithTheirKv() throws Exception {
        // the lookahead waits ~2 s in the decode after its prefill: longer than the watchdog's 500 ms for a
        // decode's first token, which must not take that wait for a stall
        try (PdTestbed bed = PdTestbed.start(SimMode.SGLANG, 1, 1, ONE_A_RANK, TIMEOUTS,
                "admission: {decode: {max_inflight_streams: 4}}\n"
                        + "health: {watchdog: {first_token_after_prefill: 500ms}}\n")) {
            awaitRanks(bed);
            JsonNode identity = decodeState(bed).get("identity");
            assertThat(identity.get("running_per_rank").asInt()).isEqualTo(1);
            assertThat(identity.get("warnings")).isEmpty();

            List<CompletableFuture<HttpResponse<String>>> burst = burst(bed, 4);
            // one running and one waiting, KV in, on each rank: the lookahead, ready for the slot that frees
            assertThat(eventually(Duration.ofSeconds(10), () -> gauge(bed, "num_running_reqs", 0) == 1
                    && gauge(bed, "num_running_reqs", 1) == 1 && gauge(bed, "num_queue_reqs", 0) == 1
                    && gauge(bed, "num_queue_reqs", 1) == 1)).as(metrics(bed)).isTrue();
            for (CompletableFuture<HttpResponse<String>> f : burst) {
                HttpResponse<String> r = f.get();
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.body()).contains("[DONE]").doesNotContain("\"error\"");
            }
            // each request reached the decode once: no attempt was given up as a stall and sent again
            assertThat(bed.decode().journal().stream().filter(r -> r.body() != null
                    && r.body().toString().contains("lookahead "))).hasSize(4);
        }
    }

    /**
     * The watchdog still catches a decode that hangs with a lookahead window: its streams, none started,
     * fill no running slot, so none is taken to wait for one; each is retried as a stall on the other
     * decode after first_token_after_prefill (not failed at timeouts.first_token), and the hung one is
     * ejected. Waiting for a slot is judged by the streams that started, not by how many are held.
     */
    @Test
    void aDecodeThatHangsWithALookaheadWindowIsStillCaughtByTheWatchdog() throws Exception {
        try (PdTestbed bed = PdTestbed.start(SimMode.SGLANG, 1, 2, ONE_A_RANK, TIMEOUTS,
                "admission: {decode: {max_inflight_streams: 4}}\n"
                        + "health: {interval: 200ms, timeout: 500ms, generate_interval: 0s,"
                        + " passive: {consecutive_failures: 2, base_ejection: 30s},"
                        + " watchdog: {first_token_after_prefill: 500ms}}\n"
                        + "retries: {max_retries: 2, backoff_base: 10ms}\n")) {
            awaitRanks(bed);
            var hung = bed.cluster.decodes().get(0);
            hung.faults().setStallAfterTokens(0); // takes the KV, never emits a token; /health stays 200
            List<CompletableFuture<HttpResponse<String>>> burst = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                burst.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/v1/completions"), "{\"model\":\"m\","
                        + "\"stream\":true,\"max_tokens\":6,\"prompt\":\"hang " + i + "\"}"),
                        HttpResponse.BodyHandlers.ofString()));
            }
            for (CompletableFuture<HttpResponse<String>> f : burst) {
                HttpResponse<String> r = f.get();
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.body()).contains("[DONE]").doesNotContain("\"error\"");
            }
            assertThat(bed.metric("sluice_retries_total{reason=\"stall\"}")).isGreaterThanOrEqualTo(1);
            assertThat(bed.gateway.workers().all().stream().filter(w -> w.url().equals(hung.url())).findFirst()
                    .orElseThrow().status().reason()).contains("stall");
            hung.faults().reset();
        }
    }

    @Test
    void aWindowAtTheRanksCapsIsWarnedAboutAndNothingWaitsInTheDecode() throws Exception {
        try (PdTestbed bed = PdTestbed.start(SimMode.SGLANG, 1, 1, ONE_A_RANK, TIMEOUTS,
                "admission: {decode: {max_inflight_streams: 2}}\n")) {
            awaitRanks(bed);
            assertThat(eventually(Duration.ofSeconds(10), () -> bed.gateway.workers().all().stream()
                    .anyMatch(w -> w.role() == WorkerRole.DECODE && !w.identity().warnings().isEmpty()))).isTrue();
            assertThat(decodeState(bed).at("/identity/warnings/0").asText())
                    .contains("admission.decode.max_inflight_streams: 2 (1 a rank over 2 ranks)")
                    .contains("running cap of 1 a rank").contains("here 6");

            List<CompletableFuture<HttpResponse<String>>> burst = burst(bed, 4);
            // two dispatched, two held in the gateway: the decode runs one a rank and has none waiting
            assertThat(eventually(Duration.ofSeconds(10), () -> gauge(bed, "num_running_reqs", 0) == 1
                    && gauge(bed, "num_running_reqs", 1) == 1)).as(metrics(bed)).isTrue();
            assertThat(gauge(bed, "num_queue_reqs", 0) + gauge(bed, "num_queue_reqs", 1)).isZero();
            for (CompletableFuture<HttpResponse<String>> f : burst) {
                assertThat(f.get().statusCode()).isEqualTo(200);
            }
        }
    }

    private static void awaitRanks(PdTestbed bed) throws InterruptedException {
        assertThat(eventually(Duration.ofSeconds(10), () -> bed.gateway.workers().all().stream()
                .allMatch(w -> w.rankPlan().ranks() == 2))).as("every worker's dp_size read").isTrue();
    }

    private static List<CompletableFuture<HttpResponse<String>>> burst(PdTestbed bed, int n) {
        List<CompletableFuture<HttpResponse<String>>> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/v1/completions"), "{\"model\":\"m\","
                    + "\"stream\":true,\"max_tokens\":40,\"prompt\":\"lookahead " + i + "\"}"),
                    HttpResponse.BodyHandlers.ofString()));
        }
        return out;
    }

    private static JsonNode decodeState(PdTestbed bed) throws Exception {
        HttpResponse<String> r = bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + bed.gateway.adminPort() + "/admin/state")).GET().build(), HttpResponse.BodyHandlers.ofString());
        for (JsonNode w : JSON.readTree(r.body()).get("workers")) {
            if (w.path("role").asText().equals("decode")) {
                return w;
            }
        }
        throw new AssertionError("no decode worker in " + r.body());
    }

    private static String metrics(PdTestbed bed) {
        try {
            return bed.http.send(HttpRequest.newBuilder(URI.create(bed.decode().url() + "/metrics")).GET().build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** One rank's value of an SGLang gauge on the decode's own {@code /metrics}, -1 when absent. */
    private static int gauge(PdTestbed bed, String name, int rank) {
        Matcher m = Pattern.compile("^sglang:" + name + "\\{[^}]*dp_rank=\"" + rank + "\"[^}]*\\} (\\S+)$",
                Pattern.MULTILINE).matcher(metrics(bed));
        return m.find() ? (int) Double.parseDouble(m.group(1)) : -1;
    }
}
