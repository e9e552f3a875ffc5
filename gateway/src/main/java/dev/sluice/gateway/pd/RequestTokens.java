package dev.sluice.gateway.pd;

import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.metrics.GatewayMetrics;

/**
 * The token counts a request's workers reported: the estimator learns from the first prompt count
 * of an unbatched request (what it estimated against what the worker counted), and the largest
 * completion count is kept (SGLang's streams report it cumulatively). Event-loop confined.
 */
final class RequestTokens {
    private final PromptTokenCounter counter;
    private final GatewayMetrics metrics;
    private final boolean batch;
    private PromptText prompt;
    private boolean promptReported;
    private long completion;

    RequestTokens(PromptTokenCounter counter, GatewayMetrics metrics, boolean batch) {
        this.counter = counter;
        this.metrics = metrics;
        this.batch = batch;
    }

    /** The prompt as the estimator saw it (set at admission). */
    void prompt(PromptText p) {
        prompt = p;
    }

    boolean wantsPrompt() {
        return !promptReported && !batch;
    }

    void prompt(long tokens) {
        if (wantsPrompt() && prompt != null && tokens > 0) {
            promptReported = true;
            counter.observe(prompt, tokens);
            metrics.promptTokens(tokens);
        }
    }

    void completion(long tokens) {
        completion = Math.max(completion, tokens);
    }

    long completion() {
        return completion;
    }
}
