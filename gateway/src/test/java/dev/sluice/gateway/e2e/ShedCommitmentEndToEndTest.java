package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The commitment horizon ({@code admission.scheduling.shed_commit_after}) over real HTTP, through the
 * gateway to a simulated SGLang prefill and decode pair at 5,000 prompt tokens/s (a configured prior, so
 * every verdict is made at arrival): a long prompt that has waited past the horizon is not shed for a
 * shorter one that arrives later and could make its deadline only in its place; the newcomer is refused
 * at its door instead (429 deadline_unreachable) and the long one is served. Before the horizon, the long one gives way
 * as before (Moore–Hodgson's move), which the second test shows with the horizon set longer.
 *
 * <p>The times: a 15,000-token prompt in prefill (3 s), then the long one queued (50,000 tokens: 10 s,
 * predicted 14.5 s with the door's margin and the first-seconds slack, inside the 15 s queue_timeout),
 * then 1.8 s later the shorter one (40,000 tokens: 8 s), which behind the long one would come ~19 s after
 * arrival and in its place ~9 s after.
 */
class ShedCommitmentEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 30s, idle_stream: 5s, request: 90s}";
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: queue, pending tokens, windows, in-flight counts back to zero
        }
    }

    private void start(String commitAfter) throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withPrefillTokensPerSecond(5_000)
                        .withDecodeStep(Duration.ofMillis(2)).withDeviceTimerMetrics(false), TIMEOUTS,
                "admission:\n  queue_timeout: 15s\n  prefill: {max_inflight_requests: 1}\n"
                        + "  prefill_rate: {prior_tokens_per_second: 5000, from_telemetry: false, state_file: none}\n"
                        + "  scheduling: {shed_commit_after: " + commitAfter + "}\n");
    }

    private static String prompt(int tokens, int salt) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"stream\":true,\"prompt\":[" + salt + ","
                + IntStream.range(1, tokens).mapToObj(i -> String.valueOf(1 + (i * 7 + salt) % 30_000))
                .collect(Collectors.joining(",")) + "]}";
    }

    private CompletableFuture<HttpResponse<String>> send(int tokens, int salt) {
        HttpRequest r = HttpRequest.newBuilder(bed.uri("/v1/completions")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(prompt(tokens, salt))).build();
        return bed.http.sendAsync(r, HttpResponse.BodyHandlers.ofString());
    }

    private static String code(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body()).path("error").path("code").asText();
    }

    /** The long one queued behind a prompt in prefill; then, {@code waitMs} later, the shorter newcomer. */
    private CompletableFuture<HttpResponse<String>>[] longThenShort(long waitMs) throws Exception {
        CompletableFuture<HttpResponse<String>> first = send(15_000, 1);
        assertThat(PdTestbed.eventually(Duration.ofSeconds(5),
                () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();
        CompletableFuture<HttpResponse<String>> longOne = send(50_000, 2);
        assertThat(PdTestbed.eventually(Duration.ofSeconds(5),
                () -> bed.gateway.admission().snapshot().queued() == 1)).as("the long one waits").isTrue();
        Thread.sleep(waitMs); // time in the queue is what commits it: the horizon is the subject here
        assertThat(longOne).as("still queued").isNotDone();
        @SuppressWarnings("unchecked")
        CompletableFuture<HttpResponse<String>>[] out = new CompletableFuture[] {first, longOne, send(40_000, 3)};
        return out;
    }

    @Test
    void aLongPromptQueuedPastTheHorizonIsNotShedForALaterShorterOne() throws Exception {
        start("1s");
        CompletableFuture<HttpResponse<String>>[] r = longThenShort(1_800);

        HttpResponse<String> newcomer = r[2].get(5, TimeUnit.SECONDS);
        assertThat(newcomer.statusCode()).as(newcomer.body()).isEqualTo(429);
        // last in line, the committed one ahead of it gives no way: its deadline is out of reach
        assertThat(code(newcomer)).isEqualTo("deadline_unreachable");

        HttpResponse<String> longOne = r[1].get(60, TimeUnit.SECONDS);
        assertThat(longOne.statusCode()).as("the committed one is served: %s", longOne.body()).isEqualTo(200);
        assertThat(longOne.body()).contains("[DONE]");
        assertThat(r[0].get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        bed.assertQuiescent();
    }

    @Test
    void beforeTheHorizonTheLongPromptStillGivesWay() throws Exception {
        start("30s");
        CompletableFuture<HttpResponse<String>>[] r = longThenShort(1_800);

        HttpResponse<String> longOne = r[1].get(5, TimeUnit.SECONDS);
        assertThat(longOne.statusCode()).as(longOne.body()).isEqualTo(429);
        assertThat(code(longOne)).isEqualTo("shed");
        assertThat(longOne.body()).contains("gave way to shorter requests");

        HttpResponse<String> newcomer = r[2].get(60, TimeUnit.SECONDS);
        assertThat(newcomer.statusCode()).as("served in the long one's place: %s", newcomer.body()).isEqualTo(200);
        assertThat(r[0].get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        bed.assertQuiescent();
    }
}
