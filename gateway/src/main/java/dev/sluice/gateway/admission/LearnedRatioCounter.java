package dev.sluice.gateway.admission;

import java.util.concurrent.CompletableFuture;

/**
 * The default counter: needs no model files. Tokens = bytes / ratio + template overhead per chat
 * message + token ids given directly. The ratio starts at the configured guess and follows the
 * {@code usage.prompt_tokens} the workers report (exponentially weighted), so after a few
 * requests it fits the deployed model's tokenizer and the traffic's language.
 */
public final class LearnedRatioCounter implements PromptTokenCounter {
    private static final double ALPHA = 0.1;
    private final int tokensPerMessage;
    private volatile double bytesPerToken;

    public LearnedRatioCounter(double initialBytesPerToken, int tokensPerMessage) {
        this.bytesPerToken = initialBytesPerToken;
        this.tokensPerMessage = tokensPerMessage;
    }

    @Override
    public CompletableFuture<Long> count(PromptText prompt) {
        return CompletableFuture.completedFuture(estimate(prompt));
    }

    /** Synchronous: a division, safe on the event loop. */
    public long estimate(PromptText prompt) {
        long textTokens = (long) Math.ceil(prompt.utf8Bytes() / bytesPerToken);
        return Math.max(1, (textTokens + prompt.explicitTokens() + (long) prompt.messages() * tokensPerMessage)
                * prompt.copies());
    }

    @Override
    public void observe(PromptText prompt, long reported) {
        long bytes = prompt.utf8Bytes();
        long overhead = prompt.explicitTokens() + (long) prompt.messages() * tokensPerMessage;
        long textTokens = reported / Math.max(1, prompt.copies()) - overhead;
        if (bytes < 16 || textTokens <= 0) {
            return; // too small to say anything about the ratio
        }
        double sample = Math.max(0.5, Math.min(32.0, (double) bytes / textTokens));
        // benign race: two concurrent updates may lose one sample
        bytesPerToken += ALPHA * (sample - bytesPerToken);
    }

    @Override
    public double bytesPerToken() {
        return bytesPerToken;
    }
}
