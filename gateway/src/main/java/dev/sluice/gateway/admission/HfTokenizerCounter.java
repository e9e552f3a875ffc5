package dev.sluice.gateway.admission;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Exact counting with the model's own {@code tokenizer.json} (HuggingFace tokenizers, native,
 * through DJL). Tokenizing a long prompt is CPU work, so it runs on a small bounded pool; when
 * that pool is saturated the request is counted by the estimator instead of waiting.
 */
public final class HfTokenizerCounter implements PromptTokenCounter {
    private final HuggingFaceTokenizer tokenizer;
    private final LearnedRatioCounter fallback;
    private final int tokensPerMessage;
    private final ThreadPoolExecutor pool;

    public HfTokenizerCounter(Path tokenizerJson, int threads, int tokensPerMessage, LearnedRatioCounter fallback)
            throws IOException {
        this.tokenizer = HuggingFaceTokenizer.builder().optTokenizerPath(tokenizerJson).optAddSpecialTokens(false)
                .optTruncation(false).optPadding(false).build();
        this.fallback = fallback;
        this.tokensPerMessage = tokensPerMessage;
        AtomicInteger n = new AtomicInteger();
        this.pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(1024),
                r -> {
                    Thread t = new Thread(r, "sluice-tokenizer-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
    }

    @Override
    public CompletableFuture<Long> count(PromptText prompt) {
        try {
            return CompletableFuture.supplyAsync(() -> exact(prompt), pool);
        } catch (RejectedExecutionException saturated) {
            return fallback.count(prompt);
        }
    }

    /** Blocking: call off the event loop. */
    public long exact(PromptText prompt) {
        long tokens = prompt.explicitTokens() + (long) prompt.messages() * tokensPerMessage;
        for (String text : prompt.texts()) {
            Encoding e = tokenizer.encode(text, false, false);
            tokens += e.getIds().length;
        }
        return Math.max(1, tokens * prompt.copies());
    }

    @Override
    public void observe(PromptText prompt, long reported) {
        fallback.observe(prompt, reported);
    }

    @Override
    public double bytesPerToken() {
        return fallback.bytesPerToken();
    }

    @Override
    public void close() {
        pool.shutdownNow();
        tokenizer.close();
    }
}
