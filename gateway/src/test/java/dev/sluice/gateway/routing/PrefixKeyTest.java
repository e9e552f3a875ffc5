package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class PrefixKeyTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode json(String s) {
        try {
            return JSON.readTree(s);
        } catch (Exception e) {
            throw new IllegalArgumentException(e);
        }
    }

    @Test
    void chatIsEveryMessageInOrder() {
        String key = PrefixKey.of("chat_completions", json("""
                {"messages": [
                  {"role": "system", "content": "You are terse."},
                  {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": " there"}]},
                  {"role": "assistant", "content": null},
                  {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/cat.png"}}]}
                ]}"""));

        assertThat(key).isEqualTo("system\nYou are terse.\nuser\nHi there\nassistant\n\nuser\nhttp://x/cat.png\n");
    }

    @Test
    void aLongerConversationExtendsTheKeyOfItsBeginning() {
        String turn1 = PrefixKey.of("chat_completions", json("""
                {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q1"}]}"""));
        String turn2 = PrefixKey.of("chat_completions", json("""
                {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q1"},
                              {"role": "assistant", "content": "A1"}, {"role": "user", "content": "Q2"}]}"""));

        assertThat(turn2).startsWith(turn1).isNotEqualTo(turn1);
    }

    @Test
    void chatToolsComeFirst() {
        String key = PrefixKey.of("chat_completions", json("""
                {"tools": [{"type": "function", "function": {"name": "f"}}],
                 "messages": [{"role": "user", "content": "go"}]}"""));

        assertThat(key).startsWith("tools\n[{\"type\":\"function\"").endsWith("\nuser\ngo\n");
    }

    @Test
    void completionsTakeThePromptOrTheFirstOfABatch() {
        assertThat(PrefixKey.of("completions", json("{\"prompt\": \"Once upon\"}"))).isEqualTo("Once upon");
        assertThat(PrefixKey.of("completions", json("{\"prompt\": [\"first\", \"second\"]}"))).isEqualTo("first");
        assertThat(PrefixKey.of("completions", json("{\"prompt\": [65, 66, 67]}"))).isEqualTo("ABC");
        assertThat(PrefixKey.of("completions", json("{\"prompt\": [[65, 66], [67]]}"))).isEqualTo("AB");
        assertThat(PrefixKey.of("completions", json("{}"))).isEmpty();
    }

    @Test
    void generateTakesTextOrInputIds() {
        assertThat(PrefixKey.of("generate", json("{\"text\": \"The sky\"}"))).isEqualTo("The sky");
        assertThat(PrefixKey.of("generate", json("{\"text\": [\"a\", \"b\"]}"))).isEqualTo("a");
        String ids1 = PrefixKey.of("generate", json("{\"input_ids\": [128000, 9906, 1917, 0]}"));
        String ids2 = PrefixKey.of("generate", json("{\"input_ids\": [128000, 9906, 1917, 374, 1]}"));
        assertThat(ids1).hasSize(4);
        assertThat(ids1.charAt(1)).isEqualTo((char) 9906);
        assertThat(ids1.charAt(0)).isEqualTo((char) (128000 & 0xFFFF));
        assertThat(ids2).startsWith(ids1.substring(0, 3)); // shared ids, shared characters
        assertThat(PrefixKey.of("generate", json("{\"input_ids\": [[5, 6], [7]]}"))).isEqualTo("\u0005\u0006");
    }

    @Test
    void keysAreCut() {
        String big = "x".repeat(PrefixKey.MAX_CHARS + 10);
        assertThat(PrefixKey.of("completions", json("{\"prompt\": \"" + big + "\"}"))).hasSize(PrefixKey.MAX_CHARS);
        assertThat(PrefixKey.of("chat_completions", json("{\"messages\": [{\"role\": \"user\", \"content\": \"" + big
                + "\"}, {\"role\": \"user\", \"content\": \"more\"}]}"))).hasSize(PrefixKey.MAX_CHARS);
    }

    @Test
    void unknownRoutesAndBodiesGiveAnEmptyKey() {
        assertThat(PrefixKey.of("embeddings", json("{\"input\": \"x\"}"))).isEmpty();
        assertThat(PrefixKey.of("completions", null)).isEmpty();
        assertThat(PrefixKey.of(null, json("{}"))).isEmpty();
        assertThat(PrefixKey.of("chat_completions", json("[1]"))).isEmpty();
    }
}
