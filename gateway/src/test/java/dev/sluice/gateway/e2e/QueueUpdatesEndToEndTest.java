package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.QueueUpdateStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import dev.sluice.testbed.sim.SimConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Queue updates through the real gateway and simulated workers: a streamed client that asks
 * ({@code X-Sluice-Queue-Updates: 1}, or its class) gets its 200 at once, SSE comments with its
 * position and an estimate while it waits, the wait when it is dispatched, and a refusal as an SSE
 * error event; every other response says its wait in {@code X-Sluice-Queue-Wait-Ms}. The prefill is
 * slow (4,000 tokens/s) and its window one request, so requests really queue.
 */
class QueueUpdatesEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withPrefillTokensPerSecond(4_000)
                        .withDecodeStep(Duration.ofMillis(1)).withDefaultMaxTokens(2),
                "{connect: 2s, first_token: 60s, idle_stream: 60s}", """
                        admission:
                          max_queued_requests: 64
                          queue_timeout: 60s
                          prefill: { max_inflight_requests: 1 }
                          initial_prefill_tokens_per_second: 4000
                          per_class: { high: { queue_updates: true } }
                        """);
    }

    @AfterEach
    void settle() throws Exception {
        bed.cluster.workers().forEach(w -> w.faults().reset());
        bed.assertQuiescent(); // queue, pending tokens, windows and in-flight counts back to zero
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    /** A /generate body of about {@code tokens} prompt tokens (4 bytes a token), not streamed. */
    static String generate(int tokens, String tag) {
        return "{\"text\":\"" + tag + " " + "abc ".repeat(tokens) + "\",\"sampling_params\":{\"max_new_tokens\":2}}";
    }

    /** A streamed chat completion of about {@code tokens} prompt tokens. */
    static String chat(int tokens, String tag) {
        return "{\"model\":\"sim-model\",\"max_tokens\":3,\"stream\":true,\"messages\":[{\"role\":\"user\","
                + "\"content\":\"" + tag + " " + "abc ".repeat(tokens) + "\"}]}";
    }

    private CompletableFuture<HttpResponse<String>> send(String path, String body, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(bed.uri(path)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return bed.http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private QueueUpdateStream opted(String body, String... headers) {
        return QueueUpdateStream.send(bed.http, bed.uri("/v1/chat/completions"), body, headers);
    }

    private static void awaitDispatched(int n) throws InterruptedException {
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() >= n))
                .as("%s", bed.gateway.admission().snapshot()).isTrue();
    }

    private static void awaitQueued(int n) throws InterruptedException {
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().queued() == n))
                .as("queued=%d: %s", n, bed.gateway.admission().snapshot()).isTrue();
    }

    @Test
    void anOptedInStreamLateInABurstSeesItsPositionFallToZeroAndAnEstimateOfItsWait() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> plain = new ArrayList<>();
        List<QueueUpdateStream> watched = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            if (i % 4 == 3) {
                watched.add(opted(chat(600, "watched " + i)));
            } else {
                plain.add(send("/generate", generate(600, "burst " + i)));
            }
            if (i == 0) {
                awaitDispatched(1);
            }
        }
        for (CompletableFuture<HttpResponse<String>> f : plain) {
            HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(r.headers().firstValue("X-Sluice-Queue-Wait-Ms")).isPresent();
        }
        List<Double> errors = new ArrayList<>();
        for (QueueUpdateStream s : watched) {
            s.done.get(60, TimeUnit.SECONDS);
            assertThat(s.status).isEqualTo(200);
            List<QueueUpdateStream.Position> positions = s.positions();
            assertThat(positions).as("%s", s.texts()).isNotEmpty();
            for (int i = 1; i < positions.size(); i++) {
                assertThat(positions.get(i).position()).as("positions never rise: %s", s.texts())
                        .isLessThanOrEqualTo(positions.get(i - 1).position());
            }
            assertThat(positions.get(positions.size() - 1).position()).isZero();
            assertThat(s.waitedMillis()).as("%s", s.texts()).isPresent();
            // the 200 and the first comment came while it waited, not with its first token
            assertThat(s.headersNanos).isLessThan(s.waitedAtNanos());
            assertThat(positions.get(0).atNanos()).isLessThan(s.waitedAtNanos());
            assertThat(s.data()).last().isEqualTo("data: [DONE]");
            assertThat(s.data()).noneMatch(d -> d.contains("\"error\""));
            assertThat(s.response.headers().firstValue("X-Sluice-Queue-Wait-Ms")).isEmpty(); // it says so in a comment
            errors.add(s.firstEstimateError());
        }
        // the later in the burst, the further back it started
        assertThat(watched.get(watched.size() - 1).positions().get(0).position()).isGreaterThan(4);
        List<Double> sorted = errors.stream().sorted().toList();
        double p50 = sorted.get(sorted.size() / 2);
        System.out.printf("queue updates: first-estimate errors %s, p50 %.2f%n", sorted, p50);
        assertThat(p50).as("p50 of |first eta - wait| / wait over %s", errors).isLessThan(0.5);
    }

    @Test
    void aClassConfiguredForUpdatesGetsThemWithoutTheHeaderAndAZeroHeaderDeclines() throws Exception {
        HttpResponse<java.util.stream.Stream<String>> byClass = bed.http.send(HttpRequest.newBuilder(
                        bed.uri("/v1/chat/completions")).header("Content-Type", "application/json")
                .header("X-Sluice-Priority", "high").POST(HttpRequest.BodyPublishers.ofString(chat(50, "c"))).build(),
                HttpResponse.BodyHandlers.ofLines());
        List<String> lines = byClass.body().toList();
        assertThat(lines).contains(": queue position=0 eta_ms=0").anyMatch(l -> l.startsWith(": queue wait_ms="));
        HttpResponse<String> declined = send("/v1/chat/completions", chat(50, "d"), "X-Sluice-Priority", "high",
                "X-Sluice-Queue-Updates", "0").get();
        assertThat(declined.body()).doesNotContain(": queue");
        assertThat(declined.headers().firstValue("X-Sluice-Queue-Wait-Ms")).isPresent();
        HttpResponse<String> bad = send("/v1/chat/completions", chat(50, "e"), "X-Sluice-Queue-Updates", "maybe").get();
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(bad.body()).at("/error/code").asText()).isEqualTo("invalid_queue_updates");
    }

    @Test
    void everyOtherResponseSaysHowLongItWaitedInTheQueue() throws Exception {
        CompletableFuture<HttpResponse<String>> blocker = send("/generate", generate(4000, "blocker")); // ~1 s
        awaitDispatched(1);
        CompletableFuture<HttpResponse<String>> whole = send("/generate", generate(10, "whole"));
        CompletableFuture<HttpResponse<String>> stream = send("/v1/chat/completions", chat(10, "stream"));
        awaitQueued(2);
        assertThat(blocker.get().headers().firstValue("X-Sluice-Queue-Wait-Ms")).hasValueSatisfying(v ->
                assertThat(Long.parseLong(v)).isLessThan(200));
        for (HttpResponse<String> r : List.of(whole.get(), stream.get())) {
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).doesNotContain(": queue");
            assertThat(r.headers().firstValue("X-Sluice-Queue-Wait-Ms")).hasValueSatisfying(v ->
                    assertThat(Long.parseLong(v)).isBetween(300L, 5_000L));
        }
    }

    @Test
    void aRefusalAfterWaitingIsAnErrorEventForAnOptedInStreamAndA429WithItsWaitForAnyOther() throws Exception {
        // the prefill turns four times slower than admission knows: the blocker takes four times longer than it looks
        bed.prefill().faults().setSlowFactor(4);
        CompletableFuture<HttpResponse<String>> blocker = send("/generate", generate(4000, "blocker"));
        awaitDispatched(1);
        // admitted (the blocker looks a second long), then refused while it waits, after its 200 went out
        QueueUpdateStream s = opted(chat(10, "late"), "X-Sluice-Deadline-Ms", "4000");
        CompletableFuture<HttpResponse<String>> other = send("/generate", generate(10, "other"),
                "X-Sluice-Deadline-Ms", "4000");
        s.done.get(30, TimeUnit.SECONDS);
        assertThat(s.status).isEqualTo(200);
        List<String> texts = s.texts();
        assertThat(texts).anyMatch(t -> t.startsWith(": queue position="));
        int event = texts.indexOf("event: error");
        assertThat(event).as("%s", texts).isNotNegative();
        JsonNode error = JSON.readTree(texts.get(event + 1).substring("data: ".length())).get("error");
        assertThat(error.get("code").asText()).isIn("queue_timeout", "deadline_unreachable");
        assertThat(error.get("type").asText()).isNotBlank();
        assertThat(error.get("retry_after").asLong()).isPositive();
        assertThat(texts.get(texts.size() - 1)).isEqualTo("data: [DONE]");
        HttpResponse<String> r = other.get();
        assertThat(r.statusCode()).isEqualTo(429);
        assertThat(r.headers().firstValue("Retry-After")).isPresent();
        assertThat(r.headers().firstValue("X-Sluice-Queue-Wait-Ms")).hasValueSatisfying(v ->
                assertThat(Long.parseLong(v)).isPositive());
        assertThat(blocker.get().statusCode()).isEqualTo(200);
    }

    @Test
    void aClientThatLeavesWhileWaitingLeavesTheQueueAtOnce() throws Exception {
        CompletableFuture<HttpResponse<String>> blocker = send("/generate", generate(8000, "blocker")); // ~2 s
        awaitDispatched(1);
        try (java.net.Socket raw = new java.net.Socket("127.0.0.1", bed.port())) {
            byte[] body = chat(10, "leaver").getBytes(java.nio.charset.StandardCharsets.UTF_8);
            raw.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Content-Type: application/json\r\nX-Sluice-Queue-Updates: 1\r\nContent-Length: " + body.length
                    + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            raw.getOutputStream().write(body);
            raw.getOutputStream().flush();
            StringBuilder seen = new StringBuilder();
            byte[] buf = new byte[4096];
            raw.setSoTimeout(5_000);
            while (!seen.toString().contains(": queue position=")) {
                int n = raw.getInputStream().read(buf);
                assertThat(n).as("stream ended early: %s", seen).isPositive();
                seen.append(new String(buf, 0, n, java.nio.charset.StandardCharsets.UTF_8));
            }
            assertThat(seen.toString()).startsWith("HTTP/1.1 200").contains("text/event-stream");
            awaitQueued(1);
        }
        // not at the blocker's end, two seconds away: at once
        assertThat(eventually(Duration.ofMillis(500), () -> bed.gateway.admission().snapshot().queued() == 0))
                .isTrue();
        assertThat(blocker.get().statusCode()).isEqualTo(200);
    }

    @Test
    void aFailedAttemptBeforeTheFirstTokenIsStillRetriedAfterTheCommentsWentOut() throws Exception {
        bed.cluster.decodes().get(0).faults().setFailStatus(429); // "busy": safe to retry on the other decode
        double retriesBefore = bed.metric("sluice_retries_total{reason=\"worker_busy\"}");
        List<QueueUpdateStream> all = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            all.add(opted(chat(20, "retried " + i)));
        }
        for (QueueUpdateStream s : all) {
            s.done.get(30, TimeUnit.SECONDS);
            assertThat(s.status).isEqualTo(200);
            assertThat(s.texts()).as("%s", s.texts()).anyMatch(t -> t.startsWith(": queue wait_ms="));
            assertThat(s.data()).as("%s", s.texts()).noneMatch(d -> d.contains("\"error\""))
                    .anyMatch(d -> d.contains("\"choices\"")).last().isEqualTo("data: [DONE]");
        }
        assertThat(bed.metric("sluice_retries_total{reason=\"worker_busy\"}")).isGreaterThan(retriesBefore);
    }
}
