package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.onLoopTrue;
import static dev.sluice.testbed.sim.SimClient.pd;
import static dev.sluice.testbed.sim.VllmLegs.COMPLETIONS;
import static dev.sluice.testbed.sim.VllmLegs.decodeLeg;
import static dev.sluice.testbed.sim.VllmLegs.prefillLeg;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The silent KV stall ({@link FaultKnobs#kvStall()}): a decode whose KV transfers hang passes SGLang's
 * health checks (they take the fake bootstrap path) while every real PD request waits.
 */
class KvStallTest {
    /** Short, so that a health check the stall blocked would answer 503 within the test. */
    private static final Duration HEALTH_TIMEOUT = Duration.ofSeconds(2);
    private SimCluster cluster;
    private final SimClient client = new SimClient();

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private void start(SimConfig cfg) throws InterruptedException {
        cluster = SimCluster.start(1, 1, 0, cfg.withDecodeStep(Duration.ofMillis(5))
                .withBootstrapTimeout(Duration.ofSeconds(20)).withHealthCheckTimeout(HEALTH_TIMEOUT));
    }

    private PrefillServer prefill() {
        return cluster.prefills().get(0);
    }

    private DecodeServer decode() {
        return cluster.decodes().get(0);
    }

    /** Sends one PD request to both halves and waits until the prefill holds its computed KV in transfer. */
    private Pair stalledRequest(String rid, long room) throws Exception {
        ObjectNode body = pd("{\"text\":\"hi\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":4}}",
                prefill(), rid, room);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill(), "/generate", body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode(), "/generate", body);
        assertThat(eventually(Duration.ofSeconds(5), () -> onLoopTrue(prefill(),
                () -> prefill().ranks.loads()[0].prefillInflight == 1)
                && onLoopTrue(decode(), () -> decode().ranks.loads()[0].decodeTransfer == 1)))
                .as("computed on the prefill, waiting in the decode's transfer queue").isTrue();
        return new Pair(p, d);
    }

    private record Pair(CompletableFuture<HttpResponse<String>> prefill,
                        CompletableFuture<HttpResponse<String>> decode) {
    }

    @Test
    void healthAnswersWhileAPdRequestStallsAndResetHealsNewRequests() throws Exception {
        start(SimConfig.defaults().withKvWait(Duration.ofSeconds(20)));
        HttpResponse<String> set = client.postNow(decode(), "/sim/faults", json("{\"kvStall\":true}"));
        assertThat(json(set.body()).get("kvStall").asBoolean()).isTrue();
        long room = nextRoom();
        Pair stalled = stalledRequest("stalled", room);

        for (String path : new String[] {"/health", "/health_generate"}) {
            long t = System.nanoTime();
            HttpResponse<String> health = client.get(decode(), path);
            assertThat(health.statusCode()).as(path + " passes: the check never waits for a KV transfer")
                    .isEqualTo(200);
            assertThat(System.nanoTime() - t).as(path + " answered at its first poll, before the 2 s timeout")
                    .isLessThan(HEALTH_TIMEOUT.toNanos());
        }
        // what the check really sends: the fake bootstrap host, room 0; it is served without any prefill
        ObjectNode fake = json("{\"input_ids\":[0],\"sampling_params\":{\"max_new_tokens\":1},"
                + "\"bootstrap_host\":\"2.2.2.2\",\"bootstrap_room\":0}");
        HttpResponse<String> fakeAnswer = client.post(decode(), "/generate", fake).get(5, TimeUnit.SECONDS);
        assertThat(fakeAnswer.statusCode()).isEqualTo(200);
        assertThat(json(fakeAnswer.body()).at("/meta_info/completion_tokens").asInt()).isEqualTo(1);

        assertThat(stalled.prefill()).as("the prefill never answers a transfer in progress").isNotDone();
        assertThat(stalled.decode()).isNotDone();
        assertThat(decode().stats().completed()).as("only the fake-bootstrap request").isEqualTo(1);
        assertThat(decode().stats().kvTransferFailures()).isZero();

        client.postNow(decode(), "/sim/faults", json("{\"reset\":true}"));
        assertThat(decode().faults().kvStall()).isFalse();
        long healed = nextRoom();
        ObjectNode body = pd("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":3}}", prefill(), "healed",
                healed);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill(), "/generate", body);
        HttpResponse<String> d = client.post(decode(), "/generate", body).get(10, TimeUnit.SECONDS);
        assertThat(d.statusCode()).as(d.body()).isEqualTo(200);
        assertThat(json(d.body()).at("/meta_info/completion_tokens").asInt()).isEqualTo(3);
        assertThat(p.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(stalled.decode()).as("a reset heals new requests, not the stalled one").isNotDone();

        client.postNow(decode(), "/abort_request", json("{\"rid\":\"stalled\"}"));

        HttpResponse<String> dr = stalled.decode().get(5, TimeUnit.SECONDS);
        assertThat(json(SimClient.dataEvents(dr.body()).get(0)).at("/meta_info/finish_reason/type").asText())
                .isEqualTo("abort");
        HttpResponse<String> pr = stalled.prefill().get(5, TimeUnit.SECONDS);
        assertThat(json(SimClient.dataEvents(pr.body()).get(0)).at("/meta_info/finish_reason/message").asText())
                .as("the decode's abort fails the transfer on the prefill")
                .startsWith("Prefill transfer failed for request rank=0 req.rid='stalled'")
                .contains("KVTransferError(bootstrap_room=" + room + ")");
        assertThat(prefill().stats().kvTransferFailures()).isEqualTo(1);
        assertThat(decode().stats().aborted()).isEqualTo(1);
        assertThat(prefill().awaitIdle(Duration.ofSeconds(5))).isTrue();
        assertThat(decode().awaitIdle(Duration.ofSeconds(5))).isTrue();
    }

    @Test
    void theDecodesWaitingTimeoutEndsTheStallOnBothHalves() throws Exception {
        start(SimConfig.defaults().withKvWait(Duration.ofMillis(800)));
        decode().faults().setKvStall(true);
        long room = nextRoom();
        Pair stalled = stalledRequest("timed-out", room);

        HttpResponse<String> dr = stalled.decode().get(5, TimeUnit.SECONDS);
        assertThat(json(SimClient.dataEvents(dr.body()).get(0)).at("/meta_info/finish_reason/message").asText())
                .startsWith("Decode transfer failed for request rank=0 decode_req.req.rid='timed-out'")
                .contains("KVTransferError(bootstrap_room=" + room + ")");
        HttpResponse<String> pr = stalled.prefill().get(5, TimeUnit.SECONDS);
        assertThat(json(SimClient.dataEvents(pr.body()).get(0)).at("/meta_info/finish_reason/status_code").asInt())
                .isEqualTo(500);
        assertThat(decode().stats().kvTransferFailures()).isEqualTo(1);
        assertThat(prefill().stats().kvTransferFailures()).isEqualTo(1);
        assertThat(prefill().awaitIdle(Duration.ofSeconds(5))).isTrue();
    }

    @Test
    void anAbortOnThePrefillFailsTheStalledDecodeAtOnce() throws Exception {
        start(SimConfig.defaults().withKvWait(Duration.ofSeconds(20)));
        decode().faults().setKvStall(true);
        long room = nextRoom();
        Pair stalled = stalledRequest("dropped", room);

        client.postNow(prefill(), "/abort_request", json("{\"rid\":\"dropped\"}"));

        HttpResponse<String> dr = stalled.decode().get(5, TimeUnit.SECONDS);
        assertThat(json(SimClient.dataEvents(dr.body()).get(0)).at("/meta_info/finish_reason/message").asText())
                .startsWith("Decode transfer failed").contains("KVTransferError(bootstrap_room=" + room + ")");
        assertThat(stalled.prefill().get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(prefill().stats().aborted()).isEqualTo(1);
        assertThat(decode().awaitIdle(Duration.ofSeconds(5))).isTrue();
    }

    @Test
    void aVllmDecodesReadNeverCompletesWhileHealthAnswers() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withKvWait(Duration.ofSeconds(20)), SimMode.VLLM);
        VllmPrefillServer prefill = cluster.vllmPrefills().get(0);
        VllmDecodeServer decode = cluster.vllmDecodes().get(0);
        decode.faults().setKvStall(true);
        ObjectNode body = json("{\"prompt\":\"hi\",\"max_tokens\":3,\"stream\":true}");
        HttpResponse<String> leg = client.postNow(prefill, COMPLETIONS, prefillLeg(body));
        JsonNode kv = json(leg.body()).get("kv_transfer_params");
        try (RawHttp raw = new RawHttp(decode)) {
            raw.send("POST", COMPLETIONS, decodeLeg(body, kv).toString());
            assertThat(raw.readLine()).startsWith("HTTP/1.1 200");
            assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().queued() == 1)).isTrue();
            assertThat(client.get(decode, "/health").statusCode()).isEqualTo(200);
            assertThat(prefill.stats().heldKvRequests()).as("the blocks were never read").isEqualTo(1);
            assertThat(decode.stats().completed()).isZero();
        }

        assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().aborted() == 1)).isTrue();
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().heldKvRequests() == 0))
                .as("the decode that left tells the prefill to free the blocks").isTrue();
        assertThat(decode.stats().kvTransferFailures()).isZero();
    }
}
