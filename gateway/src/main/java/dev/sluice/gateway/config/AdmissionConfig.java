package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The limits of admission control (YAML section {@code admission:}); defaults and meaning are
 * in {@code config/gateway.yaml} and {@code docs/admission.md}.
 *
 * @param maxQueuedRequests            requests waiting in the gateway's queue
 * @param maxPendingTokens             prompt tokens queued plus in prefill, all prefill workers
 * @param queueTimeout                 longest wait in the queue
 * @param maxRequestTokens             one prompt larger than this can never run: rejected at once
 * @param prefillMaxInflightRequests   dispatched to one prefill worker and not yet prefilled
 * @param prefillMaxInflightTokens     their prompt tokens (one larger request may still go alone)
 * @param decodeMaxInflightStreams     requests on one decode worker, until they end
 * @param initialPrefillTokensPerSecond drain-rate guess until the gateway has measured one
 * @param retryAfterMin                clamp of every computed Retry-After
 * @param retryAfterMax                clamp of every computed Retry-After
 * @param drainGrace                   on SIGTERM, how long queued and in-flight requests may finish
 * @param priorities                   class names, highest first
 * @param defaultPriority              the class of a request that names none
 * @param apiKeys                      API key -> tenant and class
 * @param tokenizer                    exact counting with a HuggingFace tokenizer.json, or empty for the estimator
 */
public record AdmissionConfig(int maxQueuedRequests, long maxPendingTokens, Duration queueTimeout, long maxRequestTokens,
                              int prefillMaxInflightRequests, long prefillMaxInflightTokens,
                              int decodeMaxInflightStreams, double initialPrefillTokensPerSecond,
                              Duration retryAfterMin, Duration retryAfterMax, Duration drainGrace,
                              List<String> priorities, String defaultPriority, Map<String, ApiKey> apiKeys,
                              TokenizerConfig tokenizer) {

    public AdmissionConfig {
        priorities = List.copyOf(priorities);
        apiKeys = Map.copyOf(apiKeys);
    }

    /** What an API key maps to. */
    public record ApiKey(String tenant, String priority) {
    }

    /**
     * Token counting. {@code tokenizerJson} empty: estimate from bytes with a learned ratio.
     * {@code chatTokensPerMessage}: chat template overhead per message.
     */
    public record TokenizerConfig(Optional<java.nio.file.Path> tokenizerJson, double initialBytesPerToken,
                                  int chatTokensPerMessage, int threads) {
    }

    public int priorityIndex(String name) {
        return priorities.indexOf(name);
    }
}
