package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.OpenAIServiceException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.models.Model;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The official OpenAI Java SDK as the client: a real client nobody here wrote is the judge of
 * the wire format the gateway relays, streamed and not, and of its error answers.
 */
class OpenAiSdkEndToEndTest {
    private static PdTestbed bed;
    private static OpenAIClient openai;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)),
                "{connect: 2s, first_token: 20s, idle_stream: 10s}");
        openai = OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl("http://127.0.0.1:" + bed.port() + "/v1")
                .maxRetries(0).timeout(Duration.ofSeconds(30)).build();
    }

    @AfterEach
    void reset() {
        bed.prefill().faults().reset();
        bed.decode().faults().reset();
    }

    @AfterAll
    static void stop() throws Exception {
        openai.close();
        bed.close();
    }

    private static ChatCompletionCreateParams chat(int maxTokens) {
        return ChatCompletionCreateParams.builder().model("sim-model").addUserMessage("Say something")
                .maxCompletionTokens(maxTokens).build();
    }

    @Test
    void chatCompletion() {
        ChatCompletion completion = openai.chat().completions().create(chat(6));

        assertThat(completion.choices()).hasSize(1);
        assertThat(completion.choices().get(0).message().content()).hasValueSatisfying(c -> assertThat(c).isNotBlank());
        assertThat(completion.usage()).hasValueSatisfying(u -> {
            assertThat(u.completionTokens()).isEqualTo(6);
            assertThat(u.promptTokens()).isPositive();
        });
    }

    @Test
    void streamedChatCompletion() {
        List<String> pieces = new ArrayList<>();
        List<String> finishes = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(chat(7))) {
            stream.stream().forEach(chunk -> chunk.choices().forEach(choice -> {
                choice.delta().content().ifPresent(pieces::add);
                choice.finishReason().ifPresent(f -> finishes.add(f.asString()));
            }));
        }
        assertThat(String.join("", pieces)).isNotBlank();
        assertThat(pieces.stream().filter(p -> !p.isEmpty()).count()).isEqualTo(7);
        assertThat(finishes).containsExactly("length");
    }

    @Test
    void textCompletionStreamedAndNot() {
        CompletionCreateParams params = CompletionCreateParams.builder().model("sim-model").prompt("Once upon a time")
                .maxTokens(5).build();
        Completion completion = openai.completions().create(params);
        assertThat(completion.choices().get(0).text()).isNotBlank();

        StringBuilder streamed = new StringBuilder();
        try (StreamResponse<Completion> stream = openai.completions().createStreaming(params)) {
            stream.stream().forEach(c -> c.choices().forEach(ch -> streamed.append(ch.text())));
        }
        assertThat(streamed.toString()).isNotBlank();
    }

    @Test
    void modelsAreListed() {
        List<Model> models = new ArrayList<>();
        openai.models().list().autoPager().forEach(models::add);
        assertThat(models).extracting(Model::id).contains("sim-model");
    }

    @Test
    void aWorkers429ReachesTheSdkAsA429() {
        bed.decode().faults().setFailStatus(429);
        assertThatThrownBy(() -> openai.chat().completions().create(chat(3)))
                .isInstanceOfSatisfying(OpenAIServiceException.class, e -> {
                    assertThat(e.statusCode()).isEqualTo(429);
                    assertThat(e.getMessage()).contains("decode");
                });
    }

    @Test
    void aStreamThatFailsBeforeItsFirstTokenIsAnHttpErrorForTheSdk() {
        bed.prefill().faults().setFailStatus(503);
        assertThatThrownBy(() -> {
            try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(chat(3))) {
                stream.stream().forEach(c -> { });
            }
        }).isInstanceOfSatisfying(OpenAIServiceException.class, e -> assertThat(e.statusCode()).isEqualTo(503));
    }
}
