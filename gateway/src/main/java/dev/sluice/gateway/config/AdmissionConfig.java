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
 * @param apiKeys                      key name -> its SHA-256, tenant and class (keys are never held in clear)
 * @param requireApiKey                without a valid key: 401 (else anonymous)
 * @param tenantLimits                 each tenant's share of the queue and of the token budget, and its token rate
 * @param tokenizer                    exact counting with a HuggingFace tokenizer.json, or empty for the estimator
 */
public record AdmissionConfig(int maxQueuedRequests, long maxPendingTokens, Duration queueTimeout, long maxRequestTokens,
                              int prefillMaxInflightRequests, long prefillMaxInflightTokens,
                              int decodeMaxInflightStreams, double initialPrefillTokensPerSecond,
                              Duration retryAfterMin, Duration retryAfterMax, Duration drainGrace,
                              List<String> priorities, String defaultPriority, Map<String, ApiKey> apiKeys,
                              boolean requireApiKey, TenantLimits tenantLimits, TokenizerConfig tokenizer) {

    public AdmissionConfig {
        priorities = List.copyOf(priorities);
        apiKeys = Map.copyOf(apiKeys);
    }

    /** No API keys required, no per-tenant limits beyond the defaults. */
    public AdmissionConfig(int maxQueuedRequests, long maxPendingTokens, Duration queueTimeout, long maxRequestTokens,
                           int prefillMaxInflightRequests, long prefillMaxInflightTokens, int decodeMaxInflightStreams,
                           double initialPrefillTokensPerSecond, Duration retryAfterMin, Duration retryAfterMax,
                           Duration drainGrace, List<String> priorities, String defaultPriority,
                           Map<String, ApiKey> apiKeys, TokenizerConfig tokenizer) {
        this(maxQueuedRequests, maxPendingTokens, queueTimeout, maxRequestTokens, prefillMaxInflightRequests,
                prefillMaxInflightTokens, decodeMaxInflightStreams, initialPrefillTokensPerSecond, retryAfterMin,
                retryAfterMax, drainGrace, priorities, defaultPriority, apiKeys, false, TenantLimits.DEFAULTS, tokenizer);
    }

    /**
     * One client API key, by the name it goes by in logs, metrics and /admin/state: the SHA-256 of
     * the key (64 lower-case hex digits; the key itself is never configured), its tenant, and the
     * class it grants (null: the request's header or the default).
     */
    public record ApiKey(String name, String sha256, String tenant, String priority) {
        @Override
        public String toString() {
            return "ApiKey[" + name + ", tenant=" + tenant + ", priority=" + priority + "]"; // no digest in logs
        }
    }

    /**
     * Per-tenant limits (tenants are the API keys' tenants, or X-Sluice-Tenant where no keys are
     * configured): work-conserving shares of the queue and of the pending-token budget (a tenant
     * may use idle capacity; past its share, its newest waiting request gives way to a tenant under
     * its share when the queue or the budget is full), and a token rate.
     */
    public record TenantLimits(TenantLimit defaults, Map<String, TenantLimit> perTenant) {
        public static final TenantLimits DEFAULTS = new TenantLimits(new TenantLimit(0.5, 0.5, 0), Map.of());

        public TenantLimits {
            perTenant = Map.copyOf(perTenant);
        }

        public TenantLimit of(String tenant) {
            return perTenant.getOrDefault(tenant, defaults);
        }
    }

    /**
     * @param maxQueueShare   share of max_queued_requests a tenant keeps when others need room
     * @param maxPendingShare share of max_pending_tokens likewise
     * @param tokensPerMinute prompt + completion tokens per minute; 0 = no rate limit
     */
    public record TenantLimit(double maxQueueShare, double maxPendingShare, long tokensPerMinute) {
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
