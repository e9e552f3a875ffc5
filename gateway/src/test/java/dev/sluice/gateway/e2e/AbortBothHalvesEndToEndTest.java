package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.AbortRecord;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Failing or abandoning one half aborts the other at once: the cascade of the incident (a decode
 * left waiting minutes for KV that will never come) must not happen.
 */
class AbortBothHalvesEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    // The decode's KV wait is long, so an abort "within one second" cannot be the KV wait expiring.
    private static final Duration KV_WAIT = Duration.ofSeconds(30);
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(SimConfig.defaults().withDecodeStep(Duration.ofMillis(10)).withKvWait(KV_WAIT)
                .withPrefillTokensPerSecond(50_000), "{connect: 2s, first_token: 3s, idle_stream: 1s, request: 60s}");
    }

    @AfterEach
    void resetFaults() throws Exception {
        bed.prefill().faults().reset();
        bed.decode().faults().reset();
        bed.assertQuiescent();
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    private static final String LONG_CHAT = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":100000,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"tell me a long story\"}]}";

    @Test
    void clientDisconnectMidStreamAbortsBothHalvesWithinOneSecond() throws Exception {
        long kvFailuresBefore = bed.decode().stats().kvTransferFailures();
        String rid;
        long closedAt;
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/v1/chat/completions", LONG_CHAT);
            client.readUntil("chat.completion.chunk");
            rid = client.header("X-Request-Id");
            assertThat(rid).isNotNull();
            closedAt = System.nanoTime();
        }

        assertThat(eventually(Duration.ofSeconds(1), () -> abortOf(bed.prefill(), rid).isPresent()
                && abortOf(bed.decode(), rid).isPresent())).as("both halves got /abort_request").isTrue();
        assertThat(abortOf(bed.decode(), rid).get().receivedNanos() - closedAt)
                .isLessThan(TimeUnit.SECONDS.toNanos(1));
        assertThat(bed.decode().awaitIdle(Duration.ofSeconds(5))).isTrue();
        assertThat(bed.decode().stats().kvTransferFailures()).isEqualTo(kvFailuresBefore);
        assertThat(bed.metric("sluice_aborts_total{cause=\"client_disconnect\"}")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void clientDisconnectBeforeFirstTokenAbortsBothAndCausesNoKvTransferFailure() throws Exception {
        long kvFailuresBefore = bed.decode().stats().kvTransferFailures();
        bed.prefill().faults().setSlowFactor(200); // the prefill takes seconds: the client leaves while it works
        String body = "{\"text\":\"" + "word ".repeat(2000) + "\",\"stream\":true}";
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/generate", body);
            assertThat(eventually(Duration.ofSeconds(5), () -> bed.prefill().stats().running() > 0
                    || bed.prefill().stats().queued() > 0)).isTrue();
        }
        String rid = lastRid(bed.prefill());

        assertThat(eventually(Duration.ofSeconds(1), () -> abortOf(bed.prefill(), rid).isPresent()
                && abortOf(bed.decode(), rid).isPresent())).as("both halves got /abort_request").isTrue();
        assertThat(bed.prefill().awaitIdle(Duration.ofSeconds(5))).isTrue();
        assertThat(bed.decode().awaitIdle(Duration.ofSeconds(5))).isTrue();
        assertThat(bed.decode().stats().kvTransferFailures()).isEqualTo(kvFailuresBefore);
    }

    @Test
    void prefillFailureAbortsTheDecodeAtOnceAndTheClientGetsA5xxJsonError() throws Exception {
        long kvFailuresBefore = bed.decode().stats().kvTransferFailures();
        bed.prefill().faults().setFailStatus(500);
        for (boolean stream : List.of(false, true)) {
            long sent = System.nanoTime();
            HttpResponse<String> res = bed.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":" + stream
                    + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
            long answered = System.nanoTime();

            assertThat(res.statusCode()).isEqualTo(500);
            JsonNode error = JSON.readTree(res.body()).get("error");
            assertThat(error.get("message").asText()).contains("prefill");
            assertThat(error.get("code").asText()).isEqualTo("worker_error");
            String rid = res.headers().firstValue("X-Request-Id").orElseThrow();
            // The prefill may answer before the decode's copy even left the gateway; then it is never
            // sent (nothing to abort). If the decode got it, it must get the abort within a second.
            assertThat(eventually(Duration.ofSeconds(1), () -> abortOf(bed.decode(), rid).isPresent()
                    || !received(bed.decode(), rid))).as("decode aborted or never reached").isTrue();
            assertThat(bed.decode().awaitIdle(Duration.ofSeconds(1))).as("decode holds nothing").isTrue();
            assertThat(answered - sent).as("answered long before the decode's KV wait")
                    .isLessThan(KV_WAIT.toNanos() / 10);
        }
        assertThat(bed.decode().stats().kvTransferFailures()).isEqualTo(kvFailuresBefore);
        assertThat(bed.metric("sluice_aborts_total{cause=\"peer_failed\"}")).isGreaterThanOrEqualTo(2);
    }

    @Test
    void aDecodeThatSays429StaysA429AndThePrefillIsAborted() throws Exception {
        bed.decode().faults().setFailStatus(429);
        HttpResponse<String> res = bed.post("/v1/completions", "{\"model\":\"sim-model\",\"prompt\":\"hi\"}");

        assertThat(res.statusCode()).isEqualTo(429);
        assertThat(JSON.readTree(res.body()).at("/error/type").asText()).isEqualTo("rate_limit_error");
        String rid = res.headers().firstValue("X-Request-Id").orElseThrow();
        assertThat(eventually(Duration.ofSeconds(1), () -> abortOf(bed.prefill(), rid).isPresent())).isTrue();
    }

    @Test
    void aDecodeThatDropsTheConnectionBeforeAnyTokenIsA502() throws Exception {
        bed.decode().faults().setDropAfterTokens(0);
        HttpResponse<String> res = bed.post("/generate", "{\"text\":\"hello\",\"stream\":true}");

        assertThat(res.statusCode()).isEqualTo(502);
        assertThat(JSON.readTree(res.body()).at("/error/code").asText()).isEqualTo("upstream_unreachable");
        String rid = res.headers().firstValue("X-Request-Id").orElseThrow();
        // the decode dropped the connection but may still hold the request: it is told to abort;
        // the prefill had already handed its KV over and finished, so it holds nothing
        assertThat(eventually(Duration.ofSeconds(1), () -> abortOf(bed.decode(), rid).isPresent())).isTrue();
        assertThat(bed.prefill().awaitIdle(Duration.ofSeconds(2))).isTrue();
    }

    @Test
    void aStreamThatFailsMidwayEndsWithAValidJsonErrorEvent() throws Exception {
        bed.decode().faults().setDropAfterTokens(3);
        HttpResponse<String> res = bed.post("/v1/chat/completions", LONG_CHAT);

        assertThat(res.statusCode()).isEqualTo(200);
        List<String> events = PdRoutingEndToEndTest.dataEvents(res.body());
        assertThat(events).last().isEqualTo("[DONE]");
        JsonNode error = JSON.readTree(events.get(events.size() - 2));
        assertThat(error.at("/error/code").asText()).isEqualTo("upstream_unreachable");
        assertThat(error.at("/error/message").asText()).contains("decode");
    }

    @Test
    void noFirstTokenInTimeIsA504AndBothHalvesAreAborted() throws Exception {
        bed.decode().faults().setStallAfterTokens(0);
        HttpResponse<String> res = bed.post("/generate", "{\"text\":\"hello\",\"stream\":true}");

        assertThat(res.statusCode()).isEqualTo(504);
        assertThat(JSON.readTree(res.body()).at("/error/code").asText()).isEqualTo("upstream_timeout");
        String rid = res.headers().firstValue("X-Request-Id").orElseThrow();
        assertThat(eventually(Duration.ofSeconds(1), () -> abortOf(bed.decode(), rid).isPresent())).isTrue();
    }

    @Test
    void aStalledStreamIsCutAfterTheIdleTimeoutWithAnErrorEvent() throws Exception {
        bed.decode().faults().setStallAfterTokens(3);
        HttpResponse<String> res = bed.post("/v1/chat/completions", LONG_CHAT);

        assertThat(res.statusCode()).isEqualTo(200);
        List<String> events = PdRoutingEndToEndTest.dataEvents(res.body());
        JsonNode error = JSON.readTree(events.get(events.size() - 2));
        assertThat(error.at("/error/code").asText()).isEqualTo("upstream_timeout");
        String rid = res.headers().firstValue("X-Request-Id").orElseThrow();
        assertThat(eventually(Duration.ofSeconds(1), () -> abortOf(bed.decode(), rid).isPresent())).isTrue();
        assertThat(bed.metric("sluice_aborts_total{cause=\"stall\"}")).isGreaterThanOrEqualTo(1);
    }

    static Optional<AbortRecord> abortOf(SimWorker worker, String rid) {
        return worker.aborts().stream().filter(a -> a.rid().equals(rid)).findFirst();
    }

    private static boolean received(SimWorker worker, String rid) {
        return worker.journal().stream().anyMatch(r -> r.body() != null && rid.equals(r.body().path("rid").asText()));
    }

    private static String lastRid(SimWorker worker) {
        var journal = worker.journal();
        for (int i = journal.size() - 1; i >= 0; i--) {
            var r = journal.get(i);
            if (r.body() != null && r.body().has("rid")) {
                return r.body().get("rid").asText();
            }
        }
        throw new AssertionError("no request with a rid reached " + worker.url());
    }
}
