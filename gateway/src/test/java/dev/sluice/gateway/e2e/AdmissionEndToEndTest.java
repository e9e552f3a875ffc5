package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Admission control through the real gateway and simulated workers: every rejection code with
 * its status, body and headers, a queued client leaving, priority eviction and tenant fairness.
 * The prefill is slow (2,000 tokens/s) and its window is one request, so requests really queue.
 */
class AdmissionEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withPrefillTokensPerSecond(2_000)
                        .withDecodeStep(Duration.ofMillis(1)).withDefaultMaxTokens(2),
                "{connect: 2s, first_token: 60s, idle_stream: 60s}", """
                        admission:
                          max_queued_requests: 3
                          max_pending_tokens: 6000
                          max_request_tokens: 4000
                          queue_timeout: 10s
                          prefill: { max_inflight_requests: 1, max_inflight_tokens: 100000 }
                          initial_prefill_tokens_per_second: 2000
                          api_keys:
                            gold-key: { sha256: 83a9d60338d134e3e8f33851f115498635f1090262307ce959b86e5eee88bb90, tenant: gold, priority: high }   # sk-gold
                            a-key: { sha256: a4a6d307ad00fa67176e1099fdbc4f4a09bb527a7f24718a5030f2f173d11f7f, tenant: a }   # sk-a
                            b-key: { sha256: 18519d64d0d18b0e84e43301547425933dc0394576666e8da1ef1790fb64ca9f, tenant: b }   # sk-b
                        """);
    }

    @AfterEach
    void settle() throws Exception {
        bed.assertQuiescent();
        assertThat(eventually(Duration.ofSeconds(10), () -> bed.gateway.admission().snapshot().idle()))
                .as("admission back to zero: %s", bed.gateway.admission().snapshot()).isTrue();
        bed.prefill().clear();
        bed.decode().clear();
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    /** A /generate body of about {@code tokens} prompt tokens at the estimator's 4 bytes per token. */
    static String prompt(int tokens, String tag) {
        return "{\"text\":\"" + tag + " " + "abc ".repeat(tokens) + "\",\"sampling_params\":{\"max_new_tokens\":2}}";
    }

    private CompletableFuture<HttpResponse<String>> send(String body, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(bed.uri("/generate")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return bed.http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private void awaitQueued(int n) throws InterruptedException {
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().queued() == n))
                .as("queued=%d, snapshot %s", n, bed.gateway.admission().snapshot()).isTrue();
    }

    private static void assertRejected(HttpResponse<String> res, int status, String code) throws Exception {
        assertThat(res.statusCode()).as(res.body()).isEqualTo(status);
        JsonNode error = JSON.readTree(res.body()).get("error");
        assertThat(error.get("code").asText()).isEqualTo(code);
        assertThat(error.get("message").asText()).isNotBlank();
        assertThat(res.headers().firstValue("X-Sluice-Reject-Reason")).hasValue(code);
    }

    private static long retryAfter(HttpResponse<String> res) {
        return Long.parseLong(res.headers().firstValue("Retry-After").orElseThrow());
    }

    @Test
    void aPromptThatCanNeverRunIsRejectedAtOnceWith413() throws Exception {
        HttpResponse<String> res = send(prompt(5000, "huge")).get();
        assertRejected(res, 413, "request_too_large");
        assertThat(bed.prefill().journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
    }

    @Test
    void aFullQueueIs429QueueFullWithARetryAfterFromTheDrainRate() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
        inFlight.add(send(prompt(1000, "running")));   // dispatched: ~0.5 s of prefill
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();
        for (int i = 0; i < 3; i++) {
            inFlight.add(send(prompt(100, "q" + i)));
        }
        awaitQueued(3);

        HttpResponse<String> res = send(prompt(100, "overflow")).get();
        assertRejected(res, 429, "queue_full");
        assertThat(retryAfter(res)).isBetween(1L, 60L);
        for (var f : inFlight) {
            assertThat(f.get().statusCode()).isEqualTo(200);
        }
        assertThat(bed.metric("sluice_rejections_total{reason=\"queue_full\"}")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void moreTokensThanTheBudgetIs429TokenBudgetExceededWithRetryAfterFromTheExcess() throws Exception {
        CompletableFuture<HttpResponse<String>> a = send(prompt(2500, "a")); // 1.25 s of prefill
        CompletableFuture<HttpResponse<String>> b = send(prompt(2600, "b")); // first token in ~2.6 s: within 3 s
        assertThat(eventually(Duration.ofSeconds(5),
                () -> bed.gateway.admission().snapshot().pendingTokens() > 5000)).isTrue();

        // longer than b, the one queued (a shorter one would take b's place: admission.scheduling.shed: longest)
        HttpResponse<String> res = send(prompt(2700, "c")).get();
        assertRejected(res, 429, "token_budget_exceeded");
        // the excess (~1,800 tokens over 6,000) drains at ~2,000 tokens/s: about a second, not a constant
        assertThat(retryAfter(res)).isBetween(1L, 3L);
        assertThat(a.get().statusCode()).isEqualTo(200);
        assertThat(b.get().statusCode()).isEqualTo(200);
    }

    @Test
    void waitingPastTheClientsDeadlineIs429QueueTimeout() throws Exception {
        // the prefill slows down 4x: the prediction (~0.8 s) says the next request fits the client's
        // 2 s deadline, the real wait (~3 s) does not; 3 s leaves room below the 5 s prefill watchdog on a
        // loaded machine (2,000 tokens took over 5 s in CI once: a stall, then the pair suspect)
        bed.prefill().faults().setSlowFactor(4);
        try {
            CompletableFuture<HttpResponse<String>> running = send(prompt(1500, "long"));
            assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();
            long t0 = System.nanoTime();
            HttpResponse<String> res = send(prompt(10, "waiting"), "X-Sluice-Deadline-Ms", "2000").get();
            long waitedMs = (System.nanoTime() - t0) / 1_000_000;

            // answered near its deadline: by the expiry (queue_timeout), or by the review before it, once the
            // measured rate says even its own 10 tokens can no longer be prefilled in time (deadline_unreachable;
            // on a busy machine the rate measured is lower, and that moment earlier): never at once
            assertThat(res.statusCode()).isEqualTo(429);
            assertThat(JSON.readTree(res.body()).at("/error/code").asText()).isIn("queue_timeout", "deadline_unreachable");
            assertThat(waitedMs).isGreaterThanOrEqualTo(1500);
            assertThat(JSON.readTree(res.body()).at("/error/message").asText()).contains("deadline");
            assertThat(running.get().statusCode()).isEqualTo(200);
        } finally {
            bed.prefill().faults().reset();
        }
    }

    @Test
    void aDeadlineThePredictedWaitCannotMeetIsRejectedOnArrival() throws Exception {
        send(prompt(2500, "warm")).get(); // measure the prefill rate (short prompts measure overhead, not compute)
        assertThat(bed.gateway.admission().snapshot().throughputMeasured()).isTrue();
        CompletableFuture<HttpResponse<String>> running = send(prompt(3900, "long"));
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();

        long t0 = System.nanoTime();
        HttpResponse<String> res = send(prompt(10, "hurry"), "X-Sluice-Deadline-Ms", "500").get();
        long rejectionMs = (System.nanoTime() - t0) / 1_000_000;

        assertRejected(res, 429, "deadline_unreachable");
        assertThat(rejectionMs).as("answered at arrival, not after waiting").isLessThan(400);
        assertThat(running.get().statusCode()).isEqualTo(200);
    }

    @Test
    void aQueuedClientThatLeavesIsRemovedAtOnceAndNothingReachesAWorker() throws Exception {
        CompletableFuture<HttpResponse<String>> running = send(prompt(3000, "running"));
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/generate", prompt(50, "leaver"));
            awaitQueued(1);
        }
        awaitQueued(0);
        assertThat(bed.gateway.admission().snapshot().pendingTokens()).isLessThanOrEqualTo(3100);
        assertThat(running.get().statusCode()).isEqualTo(200);
        assertThat(bed.prefill().journal()).noneMatch(r -> r.body() != null && r.body().toString().contains("leaver"));
        assertThat(bed.decode().journal()).noneMatch(r -> r.body() != null && r.body().toString().contains("leaver"));
    }

    @Test
    void aHigherPriorityArrivalEvictsAQueuedLowerOneNeverTheReverse() throws Exception {
        CompletableFuture<HttpResponse<String>> running = send(prompt(1500, "running"));
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();
        List<CompletableFuture<HttpResponse<String>>> low = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            low.add(send(prompt(50, "low" + i), "X-Sluice-Priority", "low"));
        }
        awaitQueued(3);

        CompletableFuture<HttpResponse<String>> high = send(prompt(50, "vip"), "Authorization", "Bearer sk-gold");
        HttpResponse<String> lowNewcomer = send(prompt(50, "low-late"), "X-Sluice-Priority", "low").get();

        assertThat(high.get().statusCode()).isEqualTo(200);
        assertRejected(lowNewcomer, 429, "queue_full");
        long evicted = 0;
        for (var f : low) {
            HttpResponse<String> r = f.get();
            if (r.statusCode() == 429) {
                assertRejected(r, 429, "evicted");
                evicted++;
            } else {
                assertThat(r.statusCode()).isEqualTo(200);
            }
        }
        assertThat(evicted).isEqualTo(1);
        assertThat(running.get().statusCode()).isEqualTo(200);
        // the high one was served before the low ones still queued when it arrived
        List<String> order = prefillOrder();
        // served right after the running one, before every low one that was still queued
        assertThat(order).as("prefill order").hasSize(4);
        assertThat(order.subList(0, 2)).as("prefill order %s", order).containsExactly("running", "vip");
    }

    @Test
    void tenantsAreServedRoundRobinSoOneBurstDoesNotStarveAnother() throws Exception {
        CompletableFuture<HttpResponse<String>> running = send(prompt(1500, "running"));
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();
        List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
        all.add(send(prompt(50, "burstA1"), "Authorization", "Bearer sk-a"));
        all.add(send(prompt(50, "burstA2"), "Authorization", "Bearer sk-a"));
        awaitQueued(2);
        all.add(send(prompt(50, "quietB1"), "Authorization", "Bearer sk-b"));
        awaitQueued(3);
        for (var f : all) {
            assertThat(f.get().statusCode()).isEqualTo(200);
        }
        assertThat(running.get().statusCode()).isEqualTo(200);
        List<String> order = prefillOrder();
        // arrival order was A1 A2 B1; round robin serves A1 B1 A2
        // arrival order was A, A, B (the two A's race each other); round robin serves A, B, A
        assertThat(order).as("prefill order").hasSize(4);
        assertThat(order.get(0)).isEqualTo("running");
        assertThat(order.get(1)).startsWith("burstA");
        assertThat(order.get(2)).as("prefill order %s", order).isEqualTo("quietB1");
        assertThat(order.get(3)).startsWith("burstA");
    }

    /** Tags of /generate prompts in the order the prefill worker received them. */
    private static List<String> prefillOrder() {
        List<String> order = new ArrayList<>();
        for (RecordedRequest r : bed.prefill().journal()) {
            if (r.body() != null && r.body().path("text").isTextual()) {
                order.add(r.body().get("text").asText().split(" ")[0]);
            }
        }
        return order;
    }
}
