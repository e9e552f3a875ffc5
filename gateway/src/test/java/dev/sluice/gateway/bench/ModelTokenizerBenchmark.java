package dev.sluice.gateway.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.cacheview.ModelTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the model's tokenizer costs per request for the KV event view ({@code routing.kv_events.tokenizer:
 * hf}): a completion prompt and a chat (system prompt + a user line, rendered by a ChatML template, then
 * encoded) of about {@code tokens} tokens, English prose (the project's docs), through
 * {@link ModelTokenizer#of} on one thread. The tokenizer is a byte-level BPE with 4,000 merges that
 * {@code scripts/bench-jmh} trains on the docs ({@code scripts/make-bench-bpe-tokenizer.py}; no real
 * model's tokenizer.json is on the build machine): the GPT-2/Llama-3 pipeline, a smaller vocabulary.
 * The figures decide where tokenizing runs (docs/cache-affinity.md). Run: {@code scripts/bench-jmh ModelTokenizer}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class ModelTokenizerBenchmark {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Param({"1024", "8192", "32768"})
    public int tokens;

    @Param({"run/jmh/bench-bpe/tokenizer.json"})
    public String tokenizerJson;

    private ModelTokenizer tokenizer;
    private JsonNode completion;
    private JsonNode chat;
    public int ids;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        tokenizer = ModelTokenizer.load(Path.of(tokenizerJson), 1, 16);
        String prose;
        try (Stream<Path> docs = Files.list(Path.of("docs"))) {
            prose = docs.filter(p -> p.toString().endsWith(".md")).sorted().map(ModelTokenizerBenchmark::read)
                    .collect(Collectors.joining("\n"));
        }
        // grow the text until it encodes to the wanted size, then cut it there
        StringBuilder text = new StringBuilder();
        while (tokenizer.of("completions", prompt(text.toString())).length < tokens) {
            text.append(prose, 0, Math.min(prose.length(), 4 * tokens));
        }
        int lo = 0;
        int hi = text.length();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (tokenizer.of("completions", prompt(text.substring(0, mid))).length < tokens) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        String body = text.substring(0, lo);
        completion = prompt(body);
        ObjectNode c = JSON.createObjectNode();
        c.putArray("messages").add(JSON.createObjectNode().put("role", "system").put("content", body))
                .add(JSON.createObjectNode().put("role", "user").put("content", "Summarise the above."));
        chat = c;
        if (tokenizer.of("chat_completions", chat).length < tokens) {
            throw new IllegalStateException("the chat did not render: " + tokenizerJson);
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static JsonNode prompt(String text) {
        return JSON.createObjectNode().put("prompt", text);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tokenizer.close();
    }

    @Benchmark
    public int completionPrompt() {
        return tokenizer.of("completions", completion).length;
    }

    @Benchmark
    public int chatPrompt() {
        return tokenizer.of("chat_completions", chat).length;
    }
}
