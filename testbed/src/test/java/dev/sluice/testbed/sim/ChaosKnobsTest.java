package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.onLoopTrue;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A stalled worker behind a live /health, connections closed under a pool, and the knobs over HTTP. */
class ChaosKnobsTest {
    private SimCluster cluster;
    private PrefillServer prefill;
    private DecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeEach
    void start() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withKvWait(Duration.ofSeconds(20)).withBootstrapTimeout(Duration.ofSeconds(20))
                .withHealthGeneration(false)); // /health at once: these tests watch connections (HealthCheckTest: the check)
        prefill = cluster.prefills().get(0);
        decode = cluster.decodes().get(0);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            assertThat(prefill.awaitIdle(Duration.ofSeconds(5))).as("prefill idle").isTrue();
            assertThat(decode.awaitIdle(Duration.ofSeconds(5))).as("decode idle").isTrue();
        } finally {
            cluster.close();
        }
    }

    private HttpResponse<String> get(SimWorker w, String path, Duration timeout) throws Exception {
        return client.http.send(HttpRequest.newBuilder(URI.create(w.url() + path)).timeout(timeout).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aPendingHealthGenerateEndsWithItsConnection() throws Exception {
        decode.faults().setStallAll(true);
        try (RawHttp raw = new RawHttp(decode)) {
            raw.send("GET", "/health_generate", null);
            assertThat(eventually(Duration.ofSeconds(5), () -> decode.journal().stream()
                    .anyMatch(r -> r.path().equals("/health_generate")))).isTrue();
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> onLoopTrue(decode,
                () -> decode.listeners().get(0).connections() == 0))).isTrue();
        assertThat(decode.stats().running()).isZero();
    }

    @Test
    void closeIdleAfterZeroClosesTheConnectionRightAfterAKeepAliveResponse() throws Exception {
        decode.faults().setCloseIdleAfterMs(0);
        try (RawHttp raw = new RawHttp(decode)) {
            raw.send("GET", "/health", null);
            RawHttp.Response res = raw.readResponse();
            assertThat(res.status()).isEqualTo(200);
            assertThat(res.headers()).as("no warning: the pool thinks it can reuse it").doesNotContainKey("connection");
            assertThat(raw.atEof()).isTrue();
        }
    }

    @Test
    void closeIdleAfterMsClosesOnlyAfterTheIdleTimeAndANewRequestResetsIt() throws Exception {
        decode.faults().setCloseIdleAfterMs(300);
        try (RawHttp raw = new RawHttp(decode)) {
            raw.send("GET", "/health", null);
            assertThat(raw.readResponse().status()).isEqualTo(200);
            raw.send("GET", "/sim/faults", null); // within the idle time: the same connection serves it
            RawHttp.Response second = raw.readResponse();
            long answered = System.nanoTime();
            assertThat(json(second.body()).get("closeIdleAfterMs").asInt()).isEqualTo(300);
            assertThat(raw.atEof()).isTrue();
            assertThat(System.nanoTime() - answered).as("closed after the idle time, not before")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
        }
    }

    @Test
    void kvFailFractionOneFailsEveryRoomOnBothHalves() throws Exception {
        decode.faults().setKvFailFraction(1.0);
        for (int i = 0; i < 3; i++) {
            boolean stream = i == 2;
            long room = nextRoom();
            ObjectNode body = pd("{\"text\":\"hi\",\"stream\":" + stream + "}", prefill, "kv" + i, room);
            CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", body);
            assertKvTransferError(client.postNow(decode, "/generate", body), stream, room);
            assertKvTransferError(p.get(5, TimeUnit.SECONDS), stream, room);
        }
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(3);
        assertThat(decode.stats().failed()).isEqualTo(3);
        assertThat(prefill.stats().kvTransferFailures()).isEqualTo(3);
        assertThat(decode.stats().completed() + prefill.stats().completed()).isZero();
    }

    /**
     * A stream has its 200 headers already: it ends with a chunk whose finish reason is SGLang's
     * FINISH_ABORT (status 500), then {@code [DONE]}; a whole answer is a 500 error body.
     */
    private static void assertKvTransferError(HttpResponse<String> res, boolean stream, long room) {
        assertThat(res.statusCode()).isEqualTo(stream ? 200 : 500);
        String message = stream ? json(SimClient.dataEvents(res.body()).get(0)).at("/meta_info/finish_reason/message")
                .asText() : json(res.body()).get("message").asText();
        assertThat(message).matches("(Decode|Prefill) transfer failed for request rank=0 .*")
                .contains("bootstrap_room=" + room + " with exception KVTransferError(bootstrap_room=" + room + ")");
        if (stream) {
            JsonNode last = json(SimClient.dataEvents(res.body()).get(0));
            assertThat(last.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
            assertThat(last.at("/meta_info/finish_reason/status_code").asInt()).isEqualTo(500);
            assertThat(SimClient.dataEvents(res.body())).hasSize(2).last().isEqualTo("[DONE]");
        }
    }

    @Test
    void kvFailFractionHalfFailsTheSameRoomsEveryRun() throws Exception {
        decode.faults().setKvFailFraction(0.5);
        int rooms = 40;
        int expectedFailures = 0;
        CompletableFuture<?>[] halves = new CompletableFuture<?>[2 * rooms];
        boolean[] expected = new boolean[rooms];
        for (int i = 0; i < rooms; i++) {
            long room = 70_000 + i; // fixed rooms: the same outcome whatever ran before
            expected[i] = decode.faults().kvFails(room);
            expectedFailures += expected[i] ? 1 : 0;
            ObjectNode body = pd("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2}}", prefill, "r" + i,
                    room);
            halves[2 * i] = client.post(prefill, "/generate", body);
            halves[2 * i + 1] = client.post(decode, "/generate", body);
        }
        CompletableFuture.allOf(halves).get(20, TimeUnit.SECONDS);

        assertThat(expectedFailures).as("some but not all").isBetween(8, 32);
        for (int i = 0; i < rooms; i++) {
            @SuppressWarnings("unchecked")
            HttpResponse<String> d = ((CompletableFuture<HttpResponse<String>>) halves[2 * i + 1]).get();
            assertThat(d.statusCode()).as("room %d", 70_000 + i).isEqualTo(expected[i] ? 500 : 200);
        }
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(expectedFailures);
        assertThat(decode.stats().completed()).isEqualTo(rooms - expectedFailures);
        assertThat(prefill.stats().kvTransferFailures()).isEqualTo(expectedFailures);
    }

    @Test
    void stallAllAcceptsAndNeverAnswersUntilAborted() throws Exception {
        client.postNow(prefill, "/sim/faults", json("{\"stallAll\":true}"));
        long room = nextRoom();
        ObjectNode body = pd("{\"text\":\"hi\"}", prefill, "hung", room);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().running() == 1
                && onLoopTrue(prefill, () -> prefill.bootstrap().waiters(room) == 1))).isTrue();
        assertThat(prefill.stats().promptTokensProcessed()).as("no work").isZero();
        assertThat(p).isNotDone();

        client.postNow(prefill, "/abort_request", json("{\"rid\":\"hung\"}"));

        JsonNode answer = json(p.get(5, TimeUnit.SECONDS).body());
        assertThat(answer.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
        assertThat(prefill.stats().aborted()).isEqualTo(1);
        assertThat(prefill.stats().running()).isZero();
        HttpResponse<String> dr = d.get(5, TimeUnit.SECONDS);
        assertThat(json(dr.body()).get("message").asText()).as("its decode fails at once")
                .startsWith("Decode transfer failed for request").contains("KVTransferError(bootstrap_room=" + room + ")");
    }

    @Test
    void stallAllOnADecodeStreamsNoTokenAndAClosedConnectionAbortsIt() throws Exception {
        decode.faults().setStallAll(true);
        ObjectNode body = pd("{\"text\":\"hi\",\"stream\":true}", prefill, "silent", nextRoom());
        try (RawHttp raw = new RawHttp(decode)) {
            raw.send("POST", "/generate", body.toString());
            assertThat(raw.readLine()).isEqualTo("HTTP/1.1 200 OK"); // stream headers go out at once
            assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().running() == 1)).isTrue();
            assertThat(decode.stats().queued()).as("not even fetching KV").isZero();
        }
        // the counter and the gauge are published one after the other: wait for both
        assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().aborted() == 1
                && decode.stats().running() == 0)).isTrue();
        assertThat(prefill.journal()).as("the prefill half was never sent").isEmpty();
    }

    @Test
    void newKnobsOverHttpAllOrNothingAndReset() throws Exception {
        HttpResponse<String> set = client.postNow(decode, "/sim/faults", json("{\"healthStatus\":503,"
                + "\"stallAll\":true,\"closeIdleAfterMs\":250,\"kvFailFraction\":0.25}"));
        assertThat(set.statusCode()).isEqualTo(200);
        JsonNode shown = json(client.get(decode, "/sim/faults").body());
        assertThat(shown.get("healthStatus").asInt()).isEqualTo(503);
        assertThat(shown.get("stallAll").asBoolean()).isTrue();
        assertThat(shown.get("closeIdleAfterMs").asInt()).isEqualTo(250);
        assertThat(shown.get("kvFailFraction").asDouble()).isEqualTo(0.25);

        HttpResponse<String> bad = client.postNow(decode, "/sim/faults", json("{\"healthStatus\":0,"
                + "\"kvFailFraction\":1.5}"));
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(json(bad.body()).get("message").asText()).isEqualTo("kvFailFraction: 1.5 (expected: 0..1)");
        assertThat(decode.faults().healthStatus()).as("nothing applied").isEqualTo(503);
        assertThatThrownBy(() -> decode.faults().setCloseIdleAfterMs(-2)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> decode.faults().setHealthStatus(42)).isInstanceOf(IllegalArgumentException.class);

        client.postNow(decode, "/sim/faults", json("{\"reset\":true}"));
        FaultKnobs f = decode.faults();
        assertThat(f.healthStatus()).isZero();
        assertThat(f.stallAll()).isFalse();
        assertThat(f.closeIdleAfterMs()).isEqualTo(-1);
        assertThat(f.kvFailFraction()).isZero();
    }

    @Test
    void aKilledConnectionUnderStallAllIsNotLeftBehind() throws Exception {
        decode.faults().setStallAll(true);
        ObjectNode body = pd("{\"text\":\"hi\"}", prefill, "dead", nextRoom());
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().running() == 1)).isTrue();

        decode.kill();

        assertThatThrownBy(() -> d.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class);
        assertThat(decode.stats().failed()).isEqualTo(1);
        assertThat(decode.stats().running()).isZero();
    }
}
