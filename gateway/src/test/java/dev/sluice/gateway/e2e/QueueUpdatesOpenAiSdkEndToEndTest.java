package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.SseException;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.sluice.gateway.testing.PdTestbed;
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
 * The official OpenAI Java SDK as a client that asked for queue updates: it streams through the
 * {@code : queue ...} comments as if they were not there, and takes the {@code error} event of a
 * refusal after the 200 for what it is, an error with the reason code.
 */
class QueueUpdatesOpenAiSdkEndToEndTest {
    private static PdTestbed bed;
    private static OpenAIClient openai;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withPrefillTokensPerSecond(4_000)
                        .withDecodeStep(Duration.ofMillis(1)),
                "{connect: 2s, first_token: 60s, idle_stream: 60s}", """
                        admission:
                          queue_timeout: 60s
                          prefill: { max_inflight_requests: 1 }
                          initial_prefill_tokens_per_second: 4000
                        """);
        openai = OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl("http://127.0.0.1:" + bed.port() + "/v1")
                .putHeader("X-Sluice-Queue-Updates", "1").maxRetries(0).timeout(Duration.ofSeconds(30)).build();
    }

    @AfterEach
    void settle() throws Exception {
        bed.prefill().faults().reset();
        bed.assertQuiescent();
    }

    @AfterAll
    static void stop() throws Exception {
        openai.close();
        bed.close();
    }

    private static CompletableFuture<HttpResponse<String>> blocker(int tokens) throws InterruptedException {
        CompletableFuture<HttpResponse<String>> f = bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"),
                "{\"text\":\"blocker " + "abc ".repeat(tokens) + "\",\"sampling_params\":{\"max_new_tokens\":2}}"),
                HttpResponse.BodyHandlers.ofString());
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1))
                .isTrue();
        return f;
    }

    private static ChatCompletionCreateParams chat(int maxTokens) {
        return ChatCompletionCreateParams.builder().model("sim-model").addUserMessage("Say something")
                .maxCompletionTokens(maxTokens).build();
    }

    @Test
    void theSdkStreamsThroughTheQueueComments() throws Exception {
        CompletableFuture<HttpResponse<String>> blocker = blocker(8000);
        CompletableFuture<List<String>> streamed = CompletableFuture.supplyAsync(() -> {
            List<String> pieces = new ArrayList<>();
            try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(chat(5))) {
                stream.stream().forEach(c -> c.choices().forEach(ch -> ch.delta().content().ifPresent(pieces::add)));
            }
            return pieces;
        });
        // it waits behind the blocker: its 200 and comments go out before its first token
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().queued() == 1)).isTrue();
        List<String> pieces = streamed.get();
        assertThat(pieces.stream().filter(p -> !p.isEmpty()).count()).isEqualTo(5);
        assertThat(String.join("", pieces)).isNotBlank();
        assertThat(blocker.get().statusCode()).isEqualTo(200);
        // the same request on the wire: the comments the SDK went through
        HttpResponse<String> raw = bed.http.send(HttpRequest.newBuilder(bed.uri("/v1/chat/completions"))
                .header("Content-Type", "application/json").header("X-Sluice-Queue-Updates", "1")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"sim-model\",\"max_tokens\":5,\"stream\":true,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"Say something\"}]}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(raw.body()).startsWith(": queue ").contains(": queue wait_ms=");
    }

    @Test
    void theSdkSurfacesARefusalAfterThe200AsAnErrorWithItsReasonCode() throws Exception {
        bed.prefill().faults().setSlowFactor(4); // the blocker takes four times longer than it looks
        CompletableFuture<HttpResponse<String>> blocker = blocker(4000);
        ChatCompletionCreateParams params = chat(5).toBuilder().putAdditionalHeader("X-Sluice-Deadline-Ms", "4000")
                .build();
        List<String> pieces = new ArrayList<>();
        assertThatThrownBy(() -> {
            try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(params)) {
                stream.stream().forEach(c -> c.choices().forEach(ch -> ch.delta().content().ifPresent(pieces::add)));
            }
        }).isInstanceOfSatisfying(SseException.class, e -> {
            assertThat(e.code()).hasValueSatisfying(c -> assertThat(c).isIn("queue_timeout", "deadline_unreachable"));
            assertThat(e.type()).isPresent();
            assertThat(e.body().toString()).contains("retry_after");
        });
        assertThat(pieces).isEmpty();
        assertThat(blocker.get().statusCode()).isEqualTo(200);
    }
}
