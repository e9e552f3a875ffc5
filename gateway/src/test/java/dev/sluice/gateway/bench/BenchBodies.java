package dev.sluice.gateway.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * Realistic request bodies and stream chunks for the JMH benchmarks, the same on every run
 * (seeded): a short chat request (~200 bytes) and a long multi-turn one (~40 KB: a system prompt
 * and a conversation's history), and an OpenAI {@code chat.completion.chunk} SSE event of one token.
 */
public final class BenchBodies {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] WORDS = {"the", "model", "request", "token", "cache", "prefill", "decode", "a",
        "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "on", "be", "server", "gateway",
        "latency", "stream", "batch", "memory", "value", "function", "return", "\"quoted\"", "data", "user",
        "answer", "question", "because", "which", "would", "should", "could", "système", "naïve", "über"};

    private BenchBodies() {
    }

    /** ~200 bytes: one user message, streamed, as most chat clients send it. */
    public static byte[] smallChat() {
        return ("{\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"messages\":[{\"role\":\"user\",\"content\":"
                + "\"What is the capital of France? Answer in one word, then explain why.\"}],"
                + "\"stream\":true,\"max_tokens\":128,\"temperature\":0.7}").getBytes(StandardCharsets.UTF_8);
    }

    /** About {@code bytes} of chat: a system prompt of a fifth of it, then user/assistant turns. */
    public static byte[] largeChat(int bytes) {
        return chat(bytes, 1).toString().getBytes(StandardCharsets.UTF_8);
    }

    /** A chat body of about {@code bytes}, whose system prompt is picked by {@code systemPrompt} (shared prefixes). */
    public static ObjectNode chat(int bytes, long systemPrompt) {
        SplittableRandom sys = new SplittableRandom(systemPrompt);
        SplittableRandom turns = new SplittableRandom(systemPrompt * 31 + bytes);
        ObjectNode body = JSON.createObjectNode();
        body.put("model", "meta-llama/Llama-3.1-8B-Instruct");
        ArrayNode messages = body.putArray("messages");
        messages.addObject().put("role", "system").put("content", text(sys, bytes / 5));
        int left = bytes - bytes / 5 - 120;
        boolean user = true;
        while (left > 0) {
            int n = Math.min(left, user ? 600 : 2_400);
            messages.addObject().put("role", user ? "user" : "assistant").put("content", text(turns, n));
            left -= n + 40;
            user = !user;
        }
        if (!user) {
            messages.addObject().put("role", "user").put("content", text(turns, 200));
        }
        body.put("stream", true);
        body.put("max_tokens", 512);
        body.put("temperature", 0.7);
        body.putObject("stream_options").put("include_usage", true);
        return body;
    }

    /** Words and some newlines, about {@code chars} long. */
    public static String text(SplittableRandom r, int chars) {
        StringBuilder sb = new StringBuilder(chars + 16);
        while (sb.length() < chars) {
            sb.append(WORDS[r.nextInt(WORDS.length)]);
            sb.append(r.nextInt(12) == 0 ? '\n' : ' ');
        }
        sb.setLength(chars);
        return sb.toString();
    }

    /** One SSE event as SGLang streams a chat completion token (~200 bytes, no usage). */
    public static String chunkEvent(int i) {
        return "data: {\"id\":\"6c1f0a2b9e3d4c5f8a7b6c5d4e3f2a1b\",\"object\":\"chat.completion.chunk\","
                + "\"created\":1764662400,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,"
                + "\"delta\":{\"role\":null,\"content\":\" tok" + (i % 10) + "\",\"reasoning_content\":null,"
                + "\"tool_calls\":null},\"logprobs\":null,\"finish_reason\":null,\"matched_stop\":null}],"
                + "\"usage\":null}\n\n";
    }
}
