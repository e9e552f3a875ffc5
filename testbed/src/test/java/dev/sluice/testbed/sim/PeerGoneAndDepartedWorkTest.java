package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.dataEvents;
import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The incident's cascade (a decode that left makes its prefill's transfer fail once computed) and
 * the accounting of GPU work done for clients that had already given up.
 */
class PeerGoneAndDepartedWorkTest {
    private static final Duration LONG = Duration.ofSeconds(60);
    /** 500 prompt tokens at 1,000 tokens/s: half a second of prefill. */
    private static final String PROMPT = "word ".repeat(400);
    private SimCluster cluster;
    private PrefillServer prefill;
    private DecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeEach
    void start() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withPrefillTokensPerSecond(1_000).withKvWait(LONG).withBootstrapTimeout(LONG));
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

    private <T> T onPrefillLoop(Callable<T> task) throws Exception {
        return prefill.loop.submit(task).get(5, TimeUnit.SECONDS);
    }

    private boolean polling(long room) throws Exception {
        return eventually(Duration.ofSeconds(5), () -> call(() -> onPrefillLoop(() -> prefill.bootstrap().waiters(room) == 1)));
    }

    private boolean peerGone(long room) throws Exception {
        return eventually(Duration.ofSeconds(5), () -> call(() -> onPrefillLoop(() -> prefill.bootstrap().peerGone(room))));
    }

    private static boolean call(Callable<Boolean> c) {
        try {
            return c.call();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Sends a decode request on a raw socket, so that the test can drop the connection as a router does. */
    private Socket rawDecode(String path, ObjectNode body) throws Exception {
        byte[] bytes = body.toString().getBytes(StandardCharsets.UTF_8);
        Socket s = new Socket(decode.host(), decode.port());
        OutputStream out = s.getOutputStream();
        out.write(("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(bytes);
        out.flush();
        return s;
    }

    @Test
    void decodeAbortedWhileWaitingMakesThePrefillTransferFailOnceComputed() throws Exception {
        long room = nextRoom();
        ObjectNode body = pd("{\"text\":\"" + PROMPT + "\"}", prefill, "gone-1", room);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        assertThat(polling(room)).as("decode long-polls the bootstrap server").isTrue();

        client.postNow(decode, "/abort_request", json("{\"rid\":\"gone-1\"}"));
        assertThat(d.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200); // aborted, not failed
        long abortedAt = System.nanoTime();
        HttpResponse<String> res = p.get(10, TimeUnit.SECONDS);

        assertThat(System.nanoTime() - abortedAt).as("long before the bootstrap timeout").isLessThan(LONG.toNanos() / 6);
        assertThat(res.statusCode()).isEqualTo(500);
        JsonNode err = json(res.body());
        assertThat(err.get("object").asText()).isEqualTo("error");
        assertThat(err.get("message").asText()).isEqualTo("Prefill transfer failed for request rank=0 req.rid='gone-1' "
                + "req.bootstrap_room=" + room + " with exception KVTransferError(bootstrap_room=" + room
                + "): decode peer gone");
        assertThat(prefill.stats().kvTransferFailures()).isEqualTo(1);
        assertThat(prefill.stats().failed()).isEqualTo(1);
        assertThat(prefill.stats().bootstrapFailures()).isZero();
        assertThat(decode.stats().kvTransferFailures()).isZero();
        assertThat(client.get(prefill, "/metrics").body()).contains("sglang:num_transfer_failed_reqs_total{")
                .containsPattern("sglang:num_transfer_failed_reqs_total\\{[^}]*} 1\\.0");
    }

    @Test
    void decodeClientDisconnectEndsAStreamedPrefillWithAnErrorEvent() throws Exception {
        long room = nextRoom();
        ObjectNode body = pd("{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}]}",
                prefill, "gone-2", room);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/v1/chat/completions", body);
        try (Socket s = rawDecode("/v1/chat/completions", body)) {
            assertThat(polling(room)).isTrue();
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().aborted() == 1)).isTrue();

        HttpResponse<String> res = p.get(10, TimeUnit.SECONDS);
        assertThat(res.statusCode()).isEqualTo(200);
        List<String> events = dataEvents(res.body());
        assertThat(events).last().isEqualTo("[DONE]");
        assertThat(json(events.get(events.size() - 2)).at("/error/message").asText())
                .startsWith("Prefill transfer failed for request").endsWith("KVTransferError(bootstrap_room=" + room
                        + "): decode peer gone");
        assertThat(json(events.get(events.size() - 2)).at("/error/code").asInt()).isEqualTo(500);
        assertThat(prefill.stats().kvTransferFailures()).isEqualTo(1);
    }

    @Test
    void decodeThatLeftBeforeThePrefillHadTheRequestStillFailsItsTransfer() throws Exception {
        long room = nextRoom();
        ObjectNode body = pd("{\"text\":\"" + PROMPT + "\"}", prefill, "gone-3", room);
        try (Socket s = rawDecode("/generate", body)) {
            assertThat(polling(room)).isTrue();
        }
        assertThat(peerGone(room)).isTrue();

        HttpResponse<String> res = client.postNow(prefill, "/generate", body);

        assertThat(res.statusCode()).isEqualTo(500);
        assertThat(json(res.body()).get("message").asText()).contains("decode peer gone");
        assertThat(prefill.stats().kvTransferFailures()).isEqualTo(1);
        assertThat(prefill.stats().promptTokensProcessed()).as("the GPU did the work anyway").isGreaterThan(400);
    }

    @Test
    void workStartedAfterTheClientGaveUpIsCountedOnBothHalves() throws Exception {
        ObjectNode late = pd("{\"text\":\"" + PROMPT + "\",\"sampling_params\":{\"max_new_tokens\":4}}", prefill,
                "late", nextRoom());
        late.put("sim_client_gives_up_at_ms", System.currentTimeMillis() - 1_000);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", late);
        assertThat(client.postNow(decode, "/generate", late).statusCode()).isEqualTo(200);
        assertThat(p.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);

        assertThat(prefill.stats().workForDepartedClients()).isEqualTo(1);
        assertThat(prefill.stats().departedClientWorkSeconds()).isBetween(0.4, 2.0); // all of its 0.5 s prefill
        assertThat(decode.stats().workForDepartedClients()).isEqualTo(1);
        assertThat(decode.stats().departedClientWorkSeconds()).isGreaterThan(0).isLessThan(0.5);
        JsonNode stats = json(client.get(prefill, "/sim/stats").body());
        assertThat(stats.get("workForDepartedClients").asLong()).isEqualTo(1);
        assertThat(stats.get("departedClientWorkSeconds").asDouble()).isGreaterThan(0.4);
        assertThat(client.get(prefill, "/metrics").body())
                .containsPattern("sim:work_for_departed_clients_total\\{[^}]*} 1\\.0")
                .contains("sim:departed_client_work_seconds_total{");
    }

    @Test
    void workStartedInTimeIsNotCountedButItsTimeAfterTheGiveUpIs() throws Exception {
        ObjectNode body = pd("{\"text\":\"" + PROMPT + "\",\"sampling_params\":{\"max_new_tokens\":2}}", prefill,
                "mid", nextRoom());
        body.put("sim_client_gives_up_at_ms", System.currentTimeMillis() + 200);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", body);
        assertThat(client.postNow(decode, "/generate", body).statusCode()).isEqualTo(200);
        p.get(5, TimeUnit.SECONDS);

        assertThat(prefill.stats().workForDepartedClients()).isZero();
        assertThat(prefill.stats().departedClientWorkSeconds()).isGreaterThan(0.05).isLessThan(0.5);
        assertThat(decode.stats().workForDepartedClients()).as("its first decode step came after 200 ms").isEqualTo(1);

        ObjectNode patient = pd("{\"text\":\"hi\"}", prefill, "patient", nextRoom());
        patient.put("sim_client_gives_up_at_ms", System.currentTimeMillis() + 60_000);
        CompletableFuture<HttpResponse<String>> p2 = client.post(prefill, "/generate", patient);
        client.postNow(decode, "/generate", patient);
        p2.get(5, TimeUnit.SECONDS);
        assertThat(prefill.stats().workForDepartedClients()).isZero();
        assertThat(decode.stats().workForDepartedClients()).isEqualTo(1);
    }
}
