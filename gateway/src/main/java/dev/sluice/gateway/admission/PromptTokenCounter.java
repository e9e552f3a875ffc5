package dev.sluice.gateway.admission;

import java.util.concurrent.CompletableFuture;

/**
 * Counts a request's prompt tokens without blocking an event loop. The estimate decides
 * admission; the workers' own {@code usage.prompt_tokens} is fed back to improve it.
 */
public interface PromptTokenCounter extends AutoCloseable {
    /** Completes with the count, on any thread (the caller hops back to its event loop). */
    CompletableFuture<Long> count(PromptText prompt);

    /** A worker reported how many prompt tokens a request of {@code utf8Bytes} really had. */
    void observe(PromptText prompt, long reportedPromptTokens);

    /** The current bytes-per-token ratio (for metrics and the admin view). */
    double bytesPerToken();

    @Override
    default void close() {
    }
}
