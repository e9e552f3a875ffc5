package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The model tokenizer against real tokenizer files (test resources {@code tokenizer/chatml} and
 * {@code tokenizer/mistral}: a WordLevel tokenizer.json with the special tokens added and a
 * BOS-adding TemplateProcessing post-processor, as Llama/Mistral ship, and real chat templates:
 * Qwen1.5/Qwen2's ChatML one and Mistral-7B-Instruct's, see docs/simulator-sources.md).
 *
 * <p>How the expected ids were derived, independently of the code under test: each template was
 * rendered with Python's jinja2 3.1.6 configured as transformers does
 * ({@code ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)}, a raising
 * {@code raise_exception}, {@code add_generation_prompt=True}); the rendered text (quoted in each test)
 * was split by hand the way the tokenizer's pipeline does (added tokens first, then the Whitespace
 * pre-tokenizer's {@code \w+|[^\w\s]+}) and looked up in the vocabulary (listed below).
 */
class ModelTokenizerTest {
    // vocab: [UNK]=0 <s>=1 </s>=2 <|im_start|>=3 <|im_end|>=4 system=5 You=6 are=7 a=8 helpful=9 assistant=10
    // user=11 hello=12 world=13 the=14 quick=15 brown=16 fox=17 .=18 ,=19 [=20 INST=21 ]=22 [/=23 how=24 is=25
    // it=26 going=27 ?=28 fine=29 thanks=30
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TWO_TURNS = "[{\"role\":\"user\",\"content\":\"hello world\"},"
            + "{\"role\":\"assistant\",\"content\":\"fine , thanks\"},"
            + "{\"role\":\"user\",\"content\":\"how is it going ?\"}]";
    private ModelTokenizer tokenizer;

    @AfterEach
    void close() {
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    private ModelTokenizer load(String dir) throws Exception {
        tokenizer = ModelTokenizer.load(Path.of("src/test/resources/tokenizer", dir, "tokenizer.json"), 1, 4);
        return tokenizer;
    }

    private static JsonNode json(String s) throws Exception {
        return JSON.readTree(s);
    }

    @Test
    void aTextPromptIsEncodedWithTheModelsBos() throws Exception {
        ModelTokenizer t = load("chatml");
        int[] expected = {1, 14, 15, 16, 17, 18}; // <s> the quick brown fox .
        assertThat(t.of("completions", json("{\"prompt\":\"the quick brown fox.\"}"))).containsExactly(expected);
        assertThat(t.of("generate", json("{\"text\":\"the quick brown fox.\"}"))).containsExactly(expected);
        assertThat(t.of("completions", json("{\"prompt\":[\"the quick brown fox.\",\"hello\"]}")))
                .as("of a batch, the first prompt").containsExactly(expected);
    }

    @Test
    void idPromptsAreUsedAsTheyAre() throws Exception {
        ModelTokenizer t = load("chatml");
        assertThat(t.of("generate", json("{\"input_ids\":[7,8,9]}"))).containsExactly(7, 8, 9);
        assertThat(t.of("completions", json("{\"prompt\":[5,6]}"))).containsExactly(5, 6);
    }

    @Test
    void aChatIsRenderedWithTheChatMlTemplateAndEncodedWithoutASecondBos() throws Exception {
        ModelTokenizer t = load("chatml");
        // jinja2: '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nhello world
        // <|im_end|>\n<|im_start|>assistant\n'
        int[] first = t.of("chat_completions", json("{\"messages\":[{\"role\":\"user\",\"content\":\"hello world\"}]}"));
        assertThat(first).containsExactly(3, 5, 6, 7, 8, 9, 10, 4, 3, 11, 12, 13, 4, 3, 10);
        // jinja2: ... '<|im_start|>assistant\nfine , thanks<|im_end|>\n<|im_start|>user\nhow is it going ?
        // <|im_end|>\n<|im_start|>assistant\n'
        int[] second = t.of("chat_completions", json("{\"messages\":" + TWO_TURNS + "}"));
        assertThat(second).containsExactly(3, 5, 6, 7, 8, 9, 10, 4, 3, 11, 12, 13, 4, 3, 10, 29, 19, 30, 4, 3, 11,
                24, 25, 26, 27, 28, 4, 3, 10);
        assertThat(second).startsWith(first); // what lets the second turn hit the first's blocks
    }

    @Test
    void aTemplateThatWritesItsOwnBosGetsItOnce() throws Exception {
        ModelTokenizer t = load("mistral");
        // jinja2: '<s>[INST] hello world [/INST]fine , thanks</s>[INST] how is it going ? [/INST]'
        assertThat(t.of("chat_completions", json("{\"messages\":" + TWO_TURNS + "}"))).containsExactly(1, 20, 21,
                22, 12, 13, 23, 21, 22, 29, 19, 30, 2, 20, 21, 22, 24, 25, 26, 27, 28, 23, 21, 22);
    }

    @Test
    void whatTheTemplateRefusesGetsNoIdsAndIsCounted() throws Exception {
        ModelTokenizer t = load("mistral");
        // Mistral's template raises on a system role; the engines answer 400, the gateway routes by its tree
        assertThat(t.of("chat_completions", json("{\"messages\":[{\"role\":\"system\",\"content\":\"hello\"}]}")))
                .isEmpty();
        assertThat(t.unmatched(UnmatchedPrompt.TEMPLATE)).isEqualTo(1);
    }

    @Test
    void inputsTheGatewayDoesNotReproduceGetNoIds() throws Exception {
        ModelTokenizer t = load("chatml");
        assertThat(t.of("chat_completions", json("{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}"))).isEmpty();
        assertThat(t.of("chat_completions", json("{\"messages\":[{\"role\":\"user\",\"content\":"
                + "[{\"type\":\"text\",\"text\":\"hello\"}]}]}"))).isEmpty();
        assertThat(t.of("completions", json("{\"prompt\":\"hello\",\"add_special_tokens\":false}"))).isEmpty();
        assertThat(t.unmatched(UnmatchedPrompt.UNSUPPORTED)).isEqualTo(3);
    }

    @Test
    void aModelWithoutAChatTemplateMatchesTextButNotChats() throws Exception {
        tokenizer = ModelTokenizer.load(Path.of("src/test/resources/tokenizer/wordlevel-tokenizer.json"), 1, 4);
        assertThat(tokenizer.of("completions", json("{\"prompt\":\"hello world\"}"))).containsExactly(1, 2);
        assertThat(tokenizer.of("chat_completions", json("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")))
                .isEmpty();
        assertThat(tokenizer.unmatched(UnmatchedPrompt.NO_TEMPLATE)).isEqualTo(1);
    }

    @Test
    void theAsyncPathGivesTheSameIds() throws Exception {
        ModelTokenizer t = load("chatml");
        JsonNode body = json("{\"messages\":" + TWO_TURNS + "}");
        assertThat(t.ofAsync("chat_completions", body).get()).containsExactly(t.of("chat_completions", body));
    }

    @Test
    void aFullPoolAnswersAtOnceWithoutIds() throws Exception {
        // one thread, one queued prompt: the first request holds the thread until released
        tokenizer = new ModelTokenizer(ai.djl.huggingface.tokenizers.HuggingFaceTokenizer.builder()
                .optTokenizerPath(Path.of("src/test/resources/tokenizer/chatml/tokenizer.json")).build(),
                java.util.Optional.empty(), 1, 1);
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ObjectNode holding = new ObjectNode(JsonNodeFactory.instance) {
            @Override
            public JsonNode get(String field) {
                started.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return super.get(field);
            }
        };
        holding.put("prompt", "the quick brown fox.");
        CompletableFuture<int[]> first = tokenizer.ofAsync("completions", holding);
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<int[]> queued = tokenizer.ofAsync("completions", json("{\"prompt\":\"hello world\"}"));
        CompletableFuture<int[]> third = tokenizer.ofAsync("completions", json("{\"prompt\":\"hello world\"}"));
        assertThat(third).isCompletedWithValueMatching(ids -> ids.length == 0);
        assertThat(tokenizer.unmatched(UnmatchedPrompt.SATURATED)).isEqualTo(1);
        release.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS)).containsExactly(1, 14, 15, 16, 17, 18);
        assertThat(queued.get(10, TimeUnit.SECONDS)).containsExactly(1, 12, 13);
    }

    @Test
    void tojsonIsPythonsJsonDumps() {
        ChatTemplate template = new ChatTemplate("{{ messages[0] | tojson }}|{{ messages | tojson(indent=2) }}",
                Map.of());
        String out = template.render(JSON.createArrayNode().add(JSON.createObjectNode().put("role", "user")
                .put("content", "héllo \"q\"\n").putNull("name").put("n", 2.5)), Map.of());
        // python3: json.dumps(m, ensure_ascii=False) and json.dumps([m], ensure_ascii=False, indent=2)
        assertThat(out).isEqualTo("{\"role\": \"user\", \"content\": \"héllo \\\"q\\\"\\n\", \"name\": null, "
                + "\"n\": 2.5}|[\n  {\n    \"role\": \"user\",\n    \"content\": \"héllo \\\"q\\\"\\n\",\n"
                + "    \"name\": null,\n    \"n\": 2.5\n  }\n]");
    }
}
