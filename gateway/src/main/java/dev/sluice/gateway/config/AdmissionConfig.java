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
 * @param perClass                     settings by class name (admission.per_class.&lt;class&gt;): queue updates,
 *                                     the ceiling and default of a request's completion tokens; a class
 *                                     not named has {@link ClassPolicy#NONE}
 */
public record AdmissionConfig(int maxQueuedRequests, long maxPendingTokens, Duration queueTimeout, long maxRequestTokens,
                              int prefillMaxInflightRequests, long prefillMaxInflightTokens,
                              int decodeMaxInflightStreams, double initialPrefillTokensPerSecond,
                              Duration retryAfterMin, Duration retryAfterMax, Duration drainGrace,
                              List<String> priorities, String defaultPriority, Map<String, ApiKey> apiKeys,
                              boolean requireApiKey, TenantLimits tenantLimits, TokenizerConfig tokenizer,
                              SchedulingConfig scheduling, PrefillRateConfig prefillRate,
                              Duration prefillMaxInflightTime, Map<String, ClassPolicy> perClass) {

    /** The default of {@code admission.prefill.max_inflight_time}. */
    public static final Duration DEFAULT_PREFILL_MAX_INFLIGHT_TIME = Duration.ofSeconds(2);

    public AdmissionConfig {
        priorities = List.copyOf(priorities);
        apiKeys = Map.copyOf(apiKeys);
        java.util.Objects.requireNonNull(scheduling, "scheduling");
        java.util.Objects.requireNonNull(prefillRate, "prefillRate");
        java.util.Objects.requireNonNull(prefillMaxInflightTime, "prefillMaxInflightTime");
        perClass = Map.copyOf(perClass);
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
                scheduling, prefillRate, prefillMaxInflightTime, Map.of());
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

    public static AdmissionConfigBuilder builder() {
        return new AdmissionConfigBuilder();
    }

    public AdmissionConfigBuilder toBuilder() {
        return builder().maxQueuedRequests(maxQueuedRequests).maxPendingTokens(maxPendingTokens).queueTimeout(queueTimeout)
                .maxRequestTokens(maxRequestTokens).prefillMaxInflightRequests(prefillMaxInflightRequests)
                .prefillMaxInflightTokens(prefillMaxInflightTokens).decodeMaxInflightStreams(decodeMaxInflightStreams)
                .initialPrefillTokensPerSecond(initialPrefillTokensPerSecond).retryAfterMin(retryAfterMin)
                .retryAfterMax(retryAfterMax).drainGrace(drainGrace).priorities(priorities)
                .defaultPriority(defaultPriority).apiKeys(apiKeys).requireApiKey(requireApiKey)
                .tenantLimits(tenantLimits).tokenizer(tokenizer).scheduling(scheduling).prefillRate(prefillRate)
                .prefillMaxInflightTime(prefillMaxInflightTime).perClass(perClass);
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
     * @param shedCommitAfter a request queued this long is committed: it no longer gives way to later
     *                       arrivals (no shed, not pushed past its deadline by a newcomer, which is
     *                       refused at its door instead); zero: never committed
     */
    public record SchedulingConfig(QueueOrder order, Duration reviewInterval, Shed shed, Duration shedCommitAfter) {
        /** Four seconds: refusals within 5 s of arrival (bench-overload 3, docs/benchmarks.md). */
        public static final Duration DEFAULT_SHED_COMMIT_AFTER = Duration.ofSeconds(4);
        public static final SchedulingConfig DEFAULTS = new SchedulingConfig(QueueOrder.EDF, Duration.ofMillis(200),
                Shed.LONGEST);

        public SchedulingConfig(QueueOrder order, Duration reviewInterval) {
            this(order, reviewInterval, Shed.LONGEST);
        }

        public SchedulingConfig(QueueOrder order, Duration reviewInterval, Shed shed) {
            this(order, reviewInterval, shed, DEFAULT_SHED_COMMIT_AFTER);
        }

        public SchedulingConfig {
            java.util.Objects.requireNonNull(order, "order");
            java.util.Objects.requireNonNull(shed, "shed");
            KeyCheck.atLeast("admission.scheduling.review_interval", reviewInterval, Duration.ofMillis(10));
            KeyCheck.atLeast("admission.scheduling.shed_commit_after", shedCommitAfter, Duration.ZERO);
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
     * @param earlyRejection refuse for a deadline at the rates' optimistic bounds, from the first
     *                      request, rather than at the point estimate once every rate is measured or a prior
     * @param calibration   the gateway's own measurement of a worker's rate when it joins
     */
    public record PrefillRateConfig(java.util.OptionalDouble prior, Map<String, Double> perWorker,
                                    boolean fromTelemetry, Optional<java.nio.file.Path> stateFile,
                                    boolean earlyRejection, PrefillCalibrationConfig calibration) {
        /** No configured prior, no state file; telemetry read when exported; early rejection and calibration (the defaults). */
        public static final PrefillRateConfig NONE = new PrefillRateConfig(java.util.OptionalDouble.empty(), Map.of(),
                true, Optional.empty(), true);

        /** With the default calibration. */
        public PrefillRateConfig(java.util.OptionalDouble prior, Map<String, Double> perWorker,
                                 boolean fromTelemetry, Optional<java.nio.file.Path> stateFile, boolean earlyRejection) {
            this(prior, perWorker, fromTelemetry, stateFile, earlyRejection, PrefillCalibrationConfig.DEFAULTS);
        }

        /** Without early rejection. */
        public PrefillRateConfig(java.util.OptionalDouble prior, Map<String, Double> perWorker,
                                 boolean fromTelemetry, Optional<java.nio.file.Path> stateFile) {
            this(prior, perWorker, fromTelemetry, stateFile, false);
        }

        public PrefillRateConfig {
            perWorker = Map.copyOf(perWorker);
            if (prior.isPresent()) {
                KeyCheck.atLeast("admission.prefill_rate.prior_tokens_per_second", prior.getAsDouble(), 1.0);
            }
            perWorker.forEach((url, v) -> KeyCheck.atLeast("admission.prefill_rate.per_worker." + url, v, 1.0));
            java.util.Objects.requireNonNull(stateFile, "stateFile");
            java.util.Objects.requireNonNull(calibration, "calibration");
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

    /** Index {@code index} of the {@code old} class list in this one's: the same name, else the default class. */
    public int remapPriority(List<String> old, int index) {
        int i = index >= 0 && index < old.size() ? priorityIndex(old.get(index)) : -1;
        return i >= 0 ? i : priorityIndex(defaultPriority());
    }

    /**
     * A copy with the queue bound and the pending-token budget replaced by a replica's share of them
     * (coordination), everything else as is. A share is not a configuration: the file's cross-checks
     * do not hold for it (a share of the budget may be below {@code max_request_tokens}, which stays
     * the fleet's: a prompt the fleet could take is refused here for want of budget, 429, never as
     * too large), so only the share's own bounds are checked.
     */
    public AdmissionConfig withShares(int queueShare, long pendingShare) {
        if (queueShare < 0 || pendingShare < 0) {
            throw new IllegalArgumentException("shares: queue " + queueShare + ", pending tokens " + pendingShare
                    + " (expected: >= 0, >= 0)");
        }
        return new AdmissionConfig(queueShare, pendingShare, queueTimeout, maxRequestTokens, prefillMaxInflightRequests,
                prefillMaxInflightTokens, decodeMaxInflightStreams, initialPrefillTokensPerSecond, retryAfterMin,
                retryAfterMax, drainGrace, priorities, defaultPriority, apiKeys, requireApiKey, tenantLimits, tokenizer,
                scheduling, prefillRate, prefillMaxInflightTime, perClass);
    }

    /** The settings of class {@code name} ({@link ClassPolicy#NONE} when it has none). */
    public ClassPolicy classPolicy(String name) {
        return perClass.getOrDefault(name, ClassPolicy.NONE);
    }

    /**
     * The classes whose streamed requests hear where they stand while they wait
     * ({@code admission.per_class.<class>.queue_updates}), as if they sent X-Sluice-Queue-Updates: 1.
     */
    public java.util.Set<String> queueUpdateClasses() {
        java.util.Set<String> out = new java.util.HashSet<>();
        perClass.forEach((name, p) -> {
            if (p.queueUpdates()) {
                out.add(name);
            }
        });
        return java.util.Set.copyOf(out);
    }
}
