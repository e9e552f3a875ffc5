package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class SimTokenizerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final SimTokenizer tokenizer = new SimTokenizer();

    @Test
    void aChatIsRenderedAsTheSimulatorRendersItAndCutIntoFourCharTokens() throws Exception {
        int[] chat = tokenizer.of("chat_completions", JSON.readTree(
                "{\"messages\":[{\"role\":\"system\",\"content\":\"abcd\"},{\"role\":\"user\",\"content\":[{\"type\":"
                        + "\"text\",\"text\":\"xy\"}]}]}"));
        // "system: abcd\nuser: xy\n" is 22 chars: 5 whole tokens
        assertThat(chat).containsExactly(SimTokenizer.text("system: abcd\nuser: xy\n"));
        assertThat(chat).hasSize(5);
        // FNV-1a of the chars "syst", masked to 31 bits
        int h = 0x811c9dc5;
        for (char ch : "syst".toCharArray()) {
            h = (h ^ ch) * 0x01000193;
        }
        assertThat(chat[0]).isEqualTo(h & 0x7fffffff);
    }

    @Test
    void tokenIdPromptsAreUsedAsTheyAre() throws Exception {
        assertThat(tokenizer.of("generate", JSON.readTree("{\"input_ids\":[5,6,7]}"))).containsExactly(5, 6, 7);
        assertThat(tokenizer.of("completions", JSON.readTree("{\"prompt\":[[9,8],[1]]}"))).containsExactly(9, 8);
        assertThat(tokenizer.of("completions", JSON.readTree("{\"prompt\":\"abcdefgh\"}"))).hasSize(2);
        assertThat(tokenizer.of("embeddings", JSON.readTree("{}"))).isEmpty();
    }
}
