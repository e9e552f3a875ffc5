package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.dataEvents;
import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.onLoopTrue;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Rejections, KV transfer errors, aborts, disconnects and injected faults. */
class FaultsAndAbortsTest {
    private static final Duration KV_WAIT = Duration.ofMillis(300);
    private SimCluster cluster;
    private PrefillServer prefill;
    private DecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeEach
    void start() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withKvWait(KV_WAIT).withPrefillTokensPerSecond(1_000));
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

    @Test
    void prefillWithoutRoomIs400AndQueuesNothing() throws Exception {
        HttpResponse<String> res = client.postNow(prefill, "/generate", json("{\"text\":\"hi\",\"rid\":\"no-room\"}"));

        assertThat(res.statusCode()).isEqualTo(400);
        JsonNode err = json(res.body());
        // /generate answers a ValueError with {"error": {"message": ...}} (http_server._create_error_response)
        assertThat(err.at("/error/message").asText()).contains("bootstrap_room");
        assertThat(err.has("code")).isFalse();
        assertThat(prefill.journal()).anyMatch(r -> r.path().equals("/generate"));
        assertThat(prefill.stats().queued() + prefill.stats().running()).isZero();
        assertThat(prefill.stats().promptTokensProcessed()).isZero();
    }

    @Test
    void decodeWhoseRoomNeverComesFailsWithKvTransferErrorAfterKvWait() throws Exception {
        ObjectNode body = pd("{\"text\":\"hi\"}", prefill, "lonely", nextRoom());
        long sent = System.nanoTime();
        HttpResponse<String> res = client.postNow(decode, "/generate", body);
        long took = System.nanoTime() - sent;

        assertThat(res.statusCode()).isEqualTo(500);
        JsonNode err = json(res.body());
        assertThat(err.get("message").asText()).startsWith("Decode transfer failed for request rank=0 "
                + "decode_req.req.rid='lonely' decode_req.req.bootstrap_room=" + body.get("bootstrap_room")
                + " with exception KVTransferError(bootstrap_room=" + body.get("bootstrap_room") + "): ");
        assertThat(err.get("object").asText()).isEqualTo("error");
        assertThat(err.get("type").asText()).isEqualTo("InternalServerError");
        assertThat(err.get("code").asInt()).isEqualTo(500);
        assertThat(took).isGreaterThanOrEqualTo(KV_WAIT.toNanos());
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(1);
        assertThat(decode.stats().failed()).isEqualTo(1);
    }

    @Test
    void streamingDecodeReportsTheKvTransferErrorAsAnEvent() throws Exception {
        HttpResponse<String> res = client.postNow(decode, "/v1/chat/completions", pd("{\"stream\":true,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", prefill, "lonely-s", nextRoom()));

        assertThat(res.statusCode()).isEqualTo(200);
        List<String> events = dataEvents(res.body());
        assertThat(events).hasSize(2).last().isEqualTo("[DONE]");
        // SGLang's serving_chat streams a scheduler abort as create_streaming_error_response
        assertThat(json(events.get(0)).at("/error/message").asText()).startsWith("Decode transfer failed for request");
        assertThat(json(events.get(0)).at("/error/code").asInt()).isEqualTo(500);
        assertThat(json(events.get(0)).at("/error/type").asText()).isEqualTo("INTERNAL_SERVER_ERROR");
        assertThat(json(events.get(0)).at("/error/object").asText()).isEqualTo("error");
    }

    @Test
    void unreachableBootstrapPortIsAKvTransferError() throws Exception {
        ObjectNode body = pd("{\"text\":\"hi\"}", prefill, "nowhere", nextRoom());
        body.put("bootstrap_port", 1); // nothing listens there
        HttpResponse<String> res = client.postNow(decode, "/generate", body);

        assertThat(res.statusCode()).isEqualTo(500);
        assertThat(json(res.body()).get("message").asText()).startsWith("Decode transfer failed for request")
                .contains("KVTransferError(bootstrap_room=").contains("cannot reach");
    }

    @Test
    void abortOnThePrefillFailsTheWaitingDecodeAtOnce() throws Exception {
        cluster.close();
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withKvWait(Duration.ofSeconds(30))
                .withPrefillTokensPerSecond(100));
        prefill = cluster.prefills().get(0);
        decode = cluster.decodes().get(0);
        ObjectNode body = pd("{\"text\":\"" + "word ".repeat(400) + "\"}", prefill, "doomed", nextRoom());
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().running() == 1
                && decode.stats().queued() == 1)).isTrue();

        long aborted = System.nanoTime();
        assertThat(client.postNow(prefill, "/abort_request", json("{\"rid\":\"doomed\"}")).statusCode()).isEqualTo(200);
        HttpResponse<String> res = d.get(10, TimeUnit.SECONDS);

        assertThat(System.nanoTime() - aborted).as("decode failed long before its KV wait").isLessThan(
                TimeUnit.SECONDS.toNanos(5));
        assertThat(res.statusCode()).isEqualTo(500);
        assertThat(json(res.body()).get("message").asText()).startsWith("Decode transfer failed for request");
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(1);
        assertThat(prefill.stats().aborted()).isEqualTo(1);
        assertThat(prefill.aborts()).singleElement().satisfies(a -> {
            assertThat(a.rid()).isEqualTo("doomed");
            assertThat(a.matched()).isTrue();
        });
        JsonNode prefillAnswer = json(p.get(5, TimeUnit.SECONDS).body());
        assertThat(prefillAnswer.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
    }

    @Test
    void abortOnTheDecodeWhileItWaitsForKvCountsAsAbortNotTransferFailure() throws Exception {
        ObjectNode body = pd("{\"text\":\"hi\"}", prefill, "early", nextRoom());
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().queued() == 1)).isTrue();

        client.postNow(decode, "/abort_request", json("{\"rid\":\"early\"}"));

        assertThat(d.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(decode.stats().aborted()).isEqualTo(1);
        assertThat(decode.stats().kvTransferFailures()).isZero();
    }

    @Test
    void abortOnTheDecodeMidStreamEndsTheStream() throws Exception {
        ObjectNode body = pd("{\"stream\":true,\"max_tokens\":100000,\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}",
                prefill, "long", nextRoom());
        client.post(prefill, "/v1/chat/completions", body);
        HttpResponse<Stream<String>> res = client.http.send(HttpRequest.newBuilder(URI.create(decode.url()
                        + "/v1/chat/completions")).POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
                HttpResponse.BodyHandlers.ofLines());
        List<String> events = new ArrayList<>();
        Iterator<String> lines = res.body().iterator();
        while (events.size() < 3 && lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("data:")) {
                events.add(line.substring(5).trim());
            }
        }
        assertThat(client.postNow(decode, "/abort_request", json("{\"rid\":\"long\"}")).statusCode()).isEqualTo(200);
        lines.forEachRemaining(line -> {
            if (line.startsWith("data:")) {
                events.add(line.substring(5).trim());
            }
        });

        assertThat(events).last().isEqualTo("[DONE]");
        assertThat(events.size()).isLessThan(1000);
        assertThat(json(events.get(events.size() - 2)).at("/choices/0/finish_reason").asText()).isEqualTo("abort");
        assertThat(decode.stats().aborted()).isEqualTo(1);
        assertThat(decode.aborts()).singleElement().extracting(AbortRecord::matched).isEqualTo(true);
    }

    @Test
    void abortOfAnUnknownRidIsRecordedAsUnmatched() throws Exception {
        HttpResponse<String> res = client.postNow(decode, "/abort_request", json("{\"rid\":\"ghost\"}"));
        assertThat(res.statusCode()).isEqualTo(200);
        assertThat(res.body()).isEqualTo("{}");
        assertThat(decode.aborts()).singleElement().extracting(AbortRecord::matched).isEqualTo(false);
        decode.clear();
        assertThat(decode.aborts()).isEmpty();
    }

    @Test
    void aClientThatDisconnectsAbortsItsPrefillWork() throws Exception {
        ObjectNode body = pd("{\"text\":\"" + "word ".repeat(4000) + "\"}", prefill, "leaver", nextRoom());
        byte[] bytes = body.toString().getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket(prefill.host(), prefill.port())) {
            OutputStream out = s.getOutputStream();
            out.write(("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                    + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(bytes);
            out.flush();
            assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().running() == 1)).isTrue();
        }
        assertThat(eventually(Duration.ofSeconds(2), () -> prefill.stats().aborted() == 1)).isTrue();
        long processed = prefill.stats().promptTokensProcessed();
        assertThat(processed).isLessThan(4000 * 5 / 4);
        assertThat(prefill.stats().workForDepartedClients()).isZero();
    }

    @Test
    void failStatusAnswersEveryGenerationAtOnce() throws Exception {
        prefill.faults().setFailStatus(503);
        HttpResponse<String> res = client.postNow(prefill, "/v1/completions", pd("{\"prompt\":\"x\"}", prefill, "f",
                nextRoom()));
        assertThat(res.statusCode()).isEqualTo(503);
        JsonNode err = json(res.body());
        assertThat(err.get("message").asText()).isEqualTo("simulated failure");
        assertThat(err.get("code").asInt()).isEqualTo(503);
        assertThat(prefill.stats().promptTokensProcessed()).isZero();
        prefill.faults().reset();
        assertThat(prefill.faults().failStatus()).isZero();
    }

    @Test
    void faultKnobsOverHttpAndStatsOverHttp() throws Exception {
        HttpResponse<String> set = client.postNow(decode, "/sim/faults", json("{\"failAfterTokens\":2}"));
        assertThat(set.statusCode()).isEqualTo(200);
        assertThat(decode.faults().failAfterTokens()).isEqualTo(2);
        ObjectNode body = pd("{\"text\":\"hi\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":10}}", prefill,
                "fail2", nextRoom());
        client.post(prefill, "/generate", body);
        List<String> events = dataEvents(client.postNow(decode, "/generate", body).body());

        assertThat(events).hasSize(4).last().isEqualTo("[DONE]");
        // SGLang ends a server-failed /generate stream with a FINISH_ABORT chunk, not an error event
        JsonNode last = json(events.get(2));
        assertThat(last.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
        assertThat(last.at("/meta_info/finish_reason/message").asText()).contains("simulated failure");
        assertThat(last.at("/meta_info/finish_reason/status_code").asInt()).isEqualTo(500);
        assertThat(last.has("error")).isFalse();
        JsonNode stats = json(client.get(decode, "/sim/stats").body());
        assertThat(stats.get("failed").asLong()).isEqualTo(1);
        assertThat(stats.has("kvTransferFailures")).isTrue();
    }

    @Test
    void dropAfterTokensClosesTheConnection() throws Exception {
        decode.faults().setDropAfterTokens(2);
        ObjectNode body = pd("{\"text\":\"hi\",\"stream\":true}", prefill, "drop", nextRoom());
        client.post(prefill, "/generate", body);
        try {
            HttpResponse<String> res = client.postNow(decode, "/generate", body);
            assertThat(res.body()).doesNotContain("[DONE]");
        } catch (java.util.concurrent.ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(java.io.IOException.class);
        }
        assertThat(eventually(Duration.ofSeconds(2), () -> decode.stats().failed() == 1)).isTrue();
    }

    @Test
    void stallAfterTokensKeepsTheRequestRunningUntilAborted() throws Exception {
        decode.faults().setStallAfterTokens(1);
        ObjectNode body = pd("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":5}}", prefill, "stall", nextRoom());
        client.post(prefill, "/generate", body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        // running alone can be seen before the first step: wait for the token the stall leaves it with
        assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().running() == 1
                && prefill.stats().completed() == 1
                && onLoopTrue(decode, () -> decode.live.stream().anyMatch(i -> i.generated == 1)))).isTrue();
        assertThat(d).isNotDone();

        client.postNow(decode, "/abort_request", json("{\"abort_all\":true}"));

        JsonNode answer = json(d.get(5, TimeUnit.SECONDS).body());
        assertThat(answer.get("text").asText()).isEqualTo(" t0");
        assertThat(answer.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
    }

    @Test
    void bootstrapTimeoutFailsThePrefill() throws Exception {
        cluster.close();
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withBootstrapTimeout(Duration.ofMillis(200)));
        prefill = cluster.prefills().get(0);
        decode = cluster.decodes().get(0);
        HttpResponse<String> res = client.postNow(prefill, "/generate", pd("{\"text\":\"hi\"}", prefill, "alone",
                nextRoom()));
        assertThat(res.statusCode()).isEqualTo(500);
        assertThat(json(res.body()).get("message").asText()).startsWith("Prefill bootstrap failed for request rank=0 "
                + "req.rid='alone' req.bootstrap_room=");
        assertThat(prefill.stats().bootstrapFailures()).isEqualTo(1);
    }
}
