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
 * @param scheduling                   the order of a class's queue and how often queued requests are re-judged
 * @param prefillRate                  where each prefill worker's rate comes from before it is measured
 * @param prefillMaxInflightTime       a prefill worker's window in time: it is given another request only while
 *                                     what it holds would be done within this at its known rate (while its rate
 *                                     is a guess: a second behind the first, more within this at the guess);
 *                                     zero: off
 * @param queueUpdateClasses           the classes whose streamed requests hear where they stand while they wait
 *                                     (admission.per_class.&lt;class&gt;.queue_updates), as if they sent
 *                                     X-Sluice-Queue-Updates: 1
 */
public record AdmissionConfig(int maxQueuedRequests, long maxPendingTokens, Duration queueTimeout, long maxRequestTokens,
                              int prefillMaxInflightRequests, long prefillMaxInflightTokens,
                              int decodeMaxInflightStreams, double initialPrefillTokensPerSecond,
                              Duration retryAfterMin, Duration retryAfterMax, Duration drainGrace,
                              List<String> priorities, String defaultPriority, Map<String, ApiKey> apiKeys,
                              boolean requireApiKey, TenantLimits tenantLimits, TokenizerConfig tokenizer,
                              SchedulingConfig scheduling, PrefillRateConfig prefillRate,
                              Duration prefillMaxInflightTime, java.util.Set<String> queueUpdateClasses) {

    /** The default of {@code admission.prefill.max_inflight_time}. */
    public static final Duration DEFAULT_PREFILL_MAX_INFLIGHT_TIME = Duration.ofSeconds(2);

    public AdmissionConfig {
        priorities = List.copyOf(priorities);
        apiKeys = Map.copyOf(apiKeys);
        java.util.Objects.requireNonNull(scheduling, "scheduling");
        java.util.Objects.requireNonNull(prefillRate, "prefillRate");
        java.util.Objects.requireNonNull(prefillMaxInflightTime, "prefillMaxInflightTime");
        queueUpdateClasses = java.util.Set.copyOf(queueUpdateClasses);
    }

    /** No class with queue updates (a client may still ask for them). */
    public AdmissionConfig(int maxQueuedRequests, long maxPendingTokens, Duration queueTimeout, long maxRequestTokens,
                           int prefillMaxInflightRequests, long prefillMaxInflightTokens, int decodeMaxInflightStreams,
                           double initialPrefillTokensPerSecond, Duration retryAfterMin, Duration retryAfterMax,
                           Duration drainGrace, List<String> priorities, String defaultPriority,
                           Map<String, ApiKey> apiKeys, boolean requireApiKey, TenantLimits tenantLimits,
                           TokenizerConfig tokenizer, SchedulingConfig scheduling, PrefillRateConfig prefillRate,
                           Duration prefillMaxInflightTime) {
        this(maxQueuedRequests, maxPendingTokens, queueTimeout, maxRequestTokens, prefillMaxInflightRequests,
                prefillMaxInflightTokens, decodeMaxInflightStreams, initialPrefillTokensPerSecond, retryAfterMin,
                retryAfterMax, drainGrace, priorities, defaultPriority, apiKeys, requireApiKey, tenantLimits, tokenizer,
                scheduling, prefillRate, prefillMaxInflightTime, java.util.Set.of());
    }

    /** No API keys required, no per-tenant limits beyond the defaults. */
    public AdmissionConfig(int maxQueuedRequests, long maxPendingTokens, Duration queueTimeout, long maxRequestTokens,
                           int prefillMaxInflightRequests, long prefillMaxInflightTokens, int decodeMaxInflightStreams,
                           double initialPrefillTokensPerSecond, Duration retryAfterMin, Duration retryAfterMax,
                           Duration drainGrace, List<String> priorities, String defaultPriority,
                           Map<String, ApiKey> apiKeys, TokenizerConfig tokenizer) {
        this(maxQueuedRequests, maxPendingTokens, queueTimeout, maxRequestTokens, prefillMaxInflightRequests,
                prefillMaxInflightTokens, decodeMaxInflightStreams, initialPrefillTokensPerSecond, retryAfterMin,
                retryAfterMax, drainGrace, priorities, defaultPriority, apiKeys, false, TenantLimits.DEFAULTS, tokenizer,
                SchedulingConfig.DEFAULTS, PrefillRateConfig.NONE, DEFAULT_PREFILL_MAX_INFLIGHT_TIME);
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().maxQueuedRequests(maxQueuedRequests).maxPendingTokens(maxPendingTokens).queueTimeout(queueTimeout)
                .maxRequestTokens(maxRequestTokens).prefillMaxInflightRequests(prefillMaxInflightRequests)
                .prefillMaxInflightTokens(prefillMaxInflightTokens).decodeMaxInflightStreams(decodeMaxInflightStreams)
                .initialPrefillTokensPerSecond(initialPrefillTokensPerSecond).retryAfterMin(retryAfterMin)
                .retryAfterMax(retryAfterMax).drainGrace(drainGrace).priorities(priorities)
                .defaultPriority(defaultPriority).apiKeys(apiKeys).requireApiKey(requireApiKey)
                .tenantLimits(tenantLimits).tokenizer(tokenizer).scheduling(scheduling).prefillRate(prefillRate)
                .prefillMaxInflightTime(prefillMaxInflightTime).queueUpdateClasses(queueUpdateClasses);
    }

    /**
     * Seventeen values, several of them adjacent longs, ints and durations: each named and checked
     * with the lower bounds of {@code admission:}'s reader; what involves two keys (the request
     * limit under the budget, the Retry-After clamp, the default class, keys' classes, a required
     * key) is checked in {@link #build}. Without API keys, keys are not required and tenants get
     * {@link TenantLimits#DEFAULTS} unless set.
     */
    public static final class Builder {
        private static final String A = "admission.";
        private Integer maxQueuedRequests;
        private Long maxPendingTokens;
        private Duration queueTimeout;
        private Long maxRequestTokens;
        private Integer prefillMaxInflightRequests;
        private Long prefillMaxInflightTokens;
        private Integer decodeMaxInflightStreams;
        private Double initialPrefillTokensPerSecond;
        private Duration retryAfterMin;
        private Duration retryAfterMax;
        private Duration drainGrace;
        private List<String> priorities;
        private String defaultPriority;
        private Map<String, ApiKey> apiKeys = Map.of();
        private boolean requireApiKey;
        private TenantLimits tenantLimits = TenantLimits.DEFAULTS;
        private TokenizerConfig tokenizer;
        private SchedulingConfig scheduling = SchedulingConfig.DEFAULTS;
        private PrefillRateConfig prefillRate = PrefillRateConfig.NONE;
        private Duration prefillMaxInflightTime = DEFAULT_PREFILL_MAX_INFLIGHT_TIME;
        private java.util.Set<String> queueUpdateClasses = java.util.Set.of();

        private Builder() {
        }

        public Builder maxQueuedRequests(int v) {
            maxQueuedRequests = KeyCheck.atLeast(A + "max_queued_requests", v, 0);
            return this;
        }

        public Builder maxPendingTokens(long v) {
            maxPendingTokens = KeyCheck.atLeast(A + "max_pending_tokens", v, 1L);
            return this;
        }

        public Builder queueTimeout(Duration v) {
            queueTimeout = KeyCheck.atLeast(A + "queue_timeout", v, Duration.ofMillis(1));
            return this;
        }

        public Builder maxRequestTokens(long v) {
            maxRequestTokens = KeyCheck.atLeast(A + "max_request_tokens", v, 1L);
            return this;
        }

        public Builder prefillMaxInflightRequests(int v) {
            prefillMaxInflightRequests = KeyCheck.atLeast(A + "prefill.max_inflight_requests", v, 1);
            return this;
        }

        public Builder prefillMaxInflightTokens(long v) {
            prefillMaxInflightTokens = KeyCheck.atLeast(A + "prefill.max_inflight_tokens", v, 1L);
            return this;
        }

        public Builder decodeMaxInflightStreams(int v) {
            decodeMaxInflightStreams = KeyCheck.atLeast(A + "decode.max_inflight_streams", v, 1);
            return this;
        }

        public Builder initialPrefillTokensPerSecond(double v) {
            initialPrefillTokensPerSecond = KeyCheck.atLeast(A + "initial_prefill_tokens_per_second", v, 1.0);
            return this;
        }

        public Builder retryAfterMin(Duration v) {
            retryAfterMin = KeyCheck.atLeast(A + "retry_after.min", v, Duration.ofSeconds(1));
            return this;
        }

        public Builder retryAfterMax(Duration v) {
            retryAfterMax = KeyCheck.atLeast(A + "retry_after.max", v, Duration.ofSeconds(1));
            return this;
        }

        public Builder drainGrace(Duration v) {
            drainGrace = KeyCheck.atLeast(A + "drain_grace", v, Duration.ZERO);
            return this;
        }

        /** Class names, highest first: at least one, each once. */
        public Builder priorities(List<String> v) {
            KeyCheck.present(A + "priorities", v);
            if (v.isEmpty()) {
                throw KeyCheck.rejected(A + "priorities", "[]", "at least one priority class, highest first");
            }
            if (new java.util.HashSet<>(v).size() != v.size()) {
                throw KeyCheck.rejected(A + "priorities", String.valueOf(v), "distinct class names");
            }
            priorities = List.copyOf(v);
            return this;
        }

        public Builder defaultPriority(String v) {
            defaultPriority = KeyCheck.present(A + "default_priority", v);
            return this;
        }

        public Builder apiKeys(Map<String, ApiKey> v) {
            apiKeys = Map.copyOf(KeyCheck.present(A + "api_keys", v));
            return this;
        }

        public Builder requireApiKey(boolean v) {
            requireApiKey = v;
            return this;
        }

        public Builder tenantLimits(TenantLimits v) {
            tenantLimits = KeyCheck.present(A + "tenant_limits", v);
            return this;
        }

        public Builder tokenizer(TokenizerConfig v) {
            tokenizer = KeyCheck.present(A + "tokenizer", v);
            return this;
        }

        public Builder scheduling(SchedulingConfig v) {
            scheduling = KeyCheck.present(A + "scheduling", v);
            return this;
        }

        public Builder prefillRate(PrefillRateConfig v) {
            prefillRate = KeyCheck.present(A + "prefill_rate", v);
            return this;
        }

        public Builder prefillMaxInflightTime(Duration v) {
            prefillMaxInflightTime = KeyCheck.atLeast(A + "prefill.max_inflight_time", v, Duration.ZERO);
            return this;
        }

        public Builder queueUpdateClasses(java.util.Set<String> v) {
            queueUpdateClasses = KeyCheck.present(A + "per_class", v);
            return this;
        }

        public AdmissionConfig build() {
            long pending = KeyCheck.set(A + "max_pending_tokens", maxPendingTokens);
            long request = KeyCheck.set(A + "max_request_tokens", maxRequestTokens);
            if (request > pending) {
                throw KeyCheck.rejected(A + "max_request_tokens", String.valueOf(request),
                        "<= admission.max_pending_tokens (" + pending + ")");
            }
            Duration min = KeyCheck.set(A + "retry_after.min", retryAfterMin);
            Duration max = KeyCheck.atLeast(A + "retry_after.max", KeyCheck.set(A + "retry_after.max", retryAfterMax),
                    A + "retry_after.min", min);
            List<String> classes = KeyCheck.set(A + "priorities", priorities);
            String def = KeyCheck.set(A + "default_priority", defaultPriority);
            if (!classes.contains(def)) {
                throw KeyCheck.rejected(A + "default_priority", def, "one of " + classes);
            }
            for (ApiKey k : apiKeys.values()) {
                if (k.priority() != null && !classes.contains(k.priority())) {
                    throw KeyCheck.rejected(A + "api_keys." + k.name() + ".priority", k.priority(), "one of " + classes);
                }
            }
            for (String c : queueUpdateClasses) {
                if (!classes.contains(c)) {
                    throw KeyCheck.rejected(A + "per_class", c, "one of " + classes);
                }
            }
            if (requireApiKey && apiKeys.isEmpty()) {
                throw KeyCheck.rejected(A + "require_api_key", "true",
                        "admission.api_keys with at least one key (else no request could pass)");
            }
            return new AdmissionConfig(KeyCheck.set(A + "max_queued_requests", maxQueuedRequests), pending,
                    KeyCheck.set(A + "queue_timeout", queueTimeout), request,
                    KeyCheck.set(A + "prefill.max_inflight_requests", prefillMaxInflightRequests),
                    KeyCheck.set(A + "prefill.max_inflight_tokens", prefillMaxInflightTokens),
                    KeyCheck.set(A + "decode.max_inflight_streams", decodeMaxInflightStreams),
                    KeyCheck.set(A + "initial_prefill_tokens_per_second", initialPrefillTokensPerSecond), min, max,
                    KeyCheck.set(A + "drain_grace", drainGrace), classes, def, apiKeys, requireApiKey, tenantLimits,
                    KeyCheck.set(A + "tokenizer", tokenizer), scheduling, prefillRate, prefillMaxInflightTime,
                    queueUpdateClasses);
        }
    }

    /** Which queued request gives way when not all of a class can make their deadlines. */
    public enum Shed {
        /** The one that cannot make it. */
        LATEST,
        /** The longest prompt ahead of it, when that lets it in (Moore–Hodgson: the most requests served). */
        LONGEST
    }

    /** The order within a priority class. */
    public enum QueueOrder {
        /** Earliest deadline first (the client's X-Sluice-Deadline-Ms, else arrival + queue_timeout). */
        EDF,
        /** Arrival order. */
        FIFO
    }

    /**
     * How the queue is served and re-judged.
     *
     * @param order          within a class (and within a tenant's share of it): earliest deadline first, or arrival
     * @param reviewInterval how often every queued request's predicted first token is checked against its deadline
     *                       even when nothing changed (a change of rate or of the work ahead re-checks at once)
     * @param shed           who gives way when not all of a class can make their deadlines
     */
    public record SchedulingConfig(QueueOrder order, Duration reviewInterval, Shed shed) {
        public static final SchedulingConfig DEFAULTS = new SchedulingConfig(QueueOrder.EDF, Duration.ofMillis(200),
                Shed.LONGEST);

        public SchedulingConfig(QueueOrder order, Duration reviewInterval) {
            this(order, reviewInterval, Shed.LONGEST);
        }

        public SchedulingConfig {
            java.util.Objects.requireNonNull(order, "order");
            java.util.Objects.requireNonNull(shed, "shed");
            KeyCheck.atLeast("admission.scheduling.review_interval", reviewInterval, Duration.ofMillis(10));
        }
    }

    /**
     * Where a prefill worker's rate (prompt tokens per second of busy time) comes from until the
     * gateway has measured it: trusted priors turn the deadline checks on from the first request.
     *
     * @param prior         tokens/s of every prefill worker without a {@code perWorker} entry; empty: none
     * @param perWorker     worker URL -> tokens/s
     * @param fromTelemetry read it from the worker's own counters when it exports them (SGLang:
     *                      {@code sglang:realtime_tokens_total{mode="prefill_compute"}} over
     *                      {@code sglang:gpu_execution_seconds_total} of its prefill passes)
     * @param stateFile     where measured rates are kept across restarts; empty: nowhere
     */
    public record PrefillRateConfig(java.util.OptionalDouble prior, Map<String, Double> perWorker,
                                    boolean fromTelemetry, Optional<java.nio.file.Path> stateFile) {
        /** No configured prior, no state file; telemetry read when exported. */
        public static final PrefillRateConfig NONE = new PrefillRateConfig(java.util.OptionalDouble.empty(), Map.of(),
                true, Optional.empty());

        public PrefillRateConfig {
            perWorker = Map.copyOf(perWorker);
            if (prior.isPresent()) {
                KeyCheck.atLeast("admission.prefill_rate.prior_tokens_per_second", prior.getAsDouble(), 1.0);
            }
            perWorker.forEach((url, v) -> KeyCheck.atLeast("admission.prefill_rate.per_worker." + url, v, 1.0));
            java.util.Objects.requireNonNull(stateFile, "stateFile");
        }

        /** The configured prior of the worker at {@code url}, or NaN. */
        public double priorOf(String url) {
            Double v = perWorker.get(url);
            return v != null ? v : prior.orElse(Double.NaN);
        }
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

        public static Builder builder() {
            return new Builder();
        }

        public Builder toBuilder() {
            return builder().tokenizerJson(tokenizerJson).initialBytesPerToken(initialBytesPerToken)
                    .chatTokensPerMessage(chatTokensPerMessage).threads(threads);
        }

        /** Two adjacent ints (overhead per message, pool threads) named and checked as {@code admission.tokenizer:}. */
        public static final class Builder {
            private static final String T = "admission.tokenizer.";
            private Optional<java.nio.file.Path> tokenizerJson = Optional.empty();
            private Double initialBytesPerToken;
            private Integer chatTokensPerMessage;
            private Integer threads;

            private Builder() {
            }

            /** Empty (the default): estimate from bytes. */
            public Builder tokenizerJson(Optional<java.nio.file.Path> v) {
                tokenizerJson = KeyCheck.present(T + "path", v);
                return this;
            }

            public Builder initialBytesPerToken(double v) {
                initialBytesPerToken = KeyCheck.atLeast(T + "initial_bytes_per_token", v, 0.5);
                return this;
            }

            public Builder chatTokensPerMessage(int v) {
                chatTokensPerMessage = KeyCheck.atLeast(T + "chat_tokens_per_message", v, 0);
                return this;
            }

            public Builder threads(int v) {
                threads = KeyCheck.atLeast(T + "threads", v, 1);
                return this;
            }

            public TokenizerConfig build() {
                return new TokenizerConfig(tokenizerJson, KeyCheck.set(T + "initial_bytes_per_token", initialBytesPerToken),
                        KeyCheck.set(T + "chat_tokens_per_message", chatTokensPerMessage), KeyCheck.set(T + "threads", threads));
            }
        }
    }

    public int priorityIndex(String name) {
        return priorities.indexOf(name);
    }
}
