package dev.sluice.gateway.admission;

import dev.sluice.gateway.testing.Requests;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class PromptTokenCounterTest {
    private static PromptText prompt(GenerationRoute route, String json) throws Exception {
        return PromptText.of(Requests.parse(route, json));
    }

    private static Path tokenizerJson() throws URISyntaxException {
        return Path.of(PromptTokenCounterTest.class.getResource("/tokenizer/wordlevel-tokenizer.json").toURI());
    }

    @Test
    void theEstimatorCountsBytesPlusChatOverheadAndLearnsFromReportedUsage() throws Exception {
        LearnedRatioCounter c = new LearnedRatioCounter(4.0, 4);
        PromptText chat = prompt(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"system\",\"content\":\"" + "a".repeat(400) + "\"},"
                        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"" + "b".repeat(396) + "\"}]}]}");
        // 800 bytes (two texts + newline each) / 4 + 2 messages x 4
        assertThat(c.estimate(chat)).isEqualTo(208);

        PromptText text = prompt(GenerationRoute.GENERATE, "{\"text\":\"" + "x".repeat(1000) + "\"}");
        for (int i = 0; i < 100; i++) {
            c.observe(text, 500); // the worker says: 2 bytes per token for this traffic
        }
        assertThat(c.bytesPerToken()).isCloseTo(2.0, org.assertj.core.data.Offset.offset(0.05));
        assertThat(c.estimate(text)).isBetween(490L, 510L);
    }

    @Test
    void tokenIdsAndBatchesAndNAreCounted() throws Exception {
        LearnedRatioCounter c = new LearnedRatioCounter(4.0, 4);
        assertThat(c.estimate(prompt(GenerationRoute.GENERATE, "{\"input_ids\":[[1,2,3],[4,5]]}"))).isEqualTo(5);
        assertThat(c.estimate(prompt(GenerationRoute.COMPLETIONS, "{\"prompt\":[\"abcd\",\"efgh\"],\"n\":3}")))
                .isEqualTo(2 * 3);
    }

    @Test
    void exactCountingUsesTheModelsTokenizerJsonOffTheEventLoop() throws Exception {
        LearnedRatioCounter fallback = new LearnedRatioCounter(4.0, 4);
        try (HfTokenizerCounter exact = new HfTokenizerCounter(tokenizerJson(), 1, 4, fallback)) {
            PromptText p = prompt(GenerationRoute.GENERATE, "{\"text\":\"The quick brown fox, hello world.\"}");
            // the, quick, brown, fox, ",", hello, world, "."
            assertThat(exact.count(p).get()).isEqualTo(8);
            String[] thread = new String[1];
            exact.count(p).thenRun(() -> thread[0] = Thread.currentThread().getName()).get();
            PromptText chat = prompt(GenerationRoute.CHAT_COMPLETIONS,
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"hello world\"}]}");
            assertThat(exact.count(chat).get()).isEqualTo(2 + 4);
        }
    }
}
