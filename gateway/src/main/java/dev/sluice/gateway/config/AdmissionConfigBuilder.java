package dev.sluice.gateway.config;

import dev.sluice.gateway.config.AdmissionConfig.ApiKey;
import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.config.AdmissionConfig.SchedulingConfig;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Seventeen values, several of them adjacent longs, ints and durations: each named and checked
 * with the lower bounds of {@code admission:}'s reader; what involves two keys (the request
 * limit under the budget, the Retry-After clamp, the default class, keys' classes, a required
 * key) is checked in {@link #build}. Without API keys, keys are not required and tenants get
 * {@link TenantLimits#DEFAULTS} unless set.
 */
public final class AdmissionConfigBuilder {
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
    private Duration prefillMaxInflightTime = AdmissionConfig.DEFAULT_PREFILL_MAX_INFLIGHT_TIME;
    private Map<String, ClassPolicy> perClass = Map.of();

    AdmissionConfigBuilder() {
    }

    public AdmissionConfigBuilder maxQueuedRequests(int v) {
        maxQueuedRequests = KeyCheck.atLeast(A + "max_queued_requests", v, 0);
        return this;
    }

    public AdmissionConfigBuilder maxPendingTokens(long v) {
        maxPendingTokens = KeyCheck.atLeast(A + "max_pending_tokens", v, 1L);
        return this;
    }

    public AdmissionConfigBuilder queueTimeout(Duration v) {
        queueTimeout = KeyCheck.atLeast(A + "queue_timeout", v, Duration.ofMillis(1));
        return this;
    }

    public AdmissionConfigBuilder maxRequestTokens(long v) {
        maxRequestTokens = KeyCheck.atLeast(A + "max_request_tokens", v, 1L);
        return this;
    }

    public AdmissionConfigBuilder prefillMaxInflightRequests(int v) {
        prefillMaxInflightRequests = KeyCheck.atLeast(A + "prefill.max_inflight_requests", v, 1);
        return this;
    }

    public AdmissionConfigBuilder prefillMaxInflightTokens(long v) {
        prefillMaxInflightTokens = KeyCheck.atLeast(A + "prefill.max_inflight_tokens", v, 1L);
        return this;
    }

    public AdmissionConfigBuilder decodeMaxInflightStreams(int v) {
        decodeMaxInflightStreams = KeyCheck.atLeast(A + "decode.max_inflight_streams", v, 1);
        return this;
    }

    public AdmissionConfigBuilder initialPrefillTokensPerSecond(double v) {
        initialPrefillTokensPerSecond = KeyCheck.atLeast(A + "initial_prefill_tokens_per_second", v, 1.0);
        return this;
    }

    public AdmissionConfigBuilder retryAfterMin(Duration v) {
        retryAfterMin = KeyCheck.atLeast(A + "retry_after.min", v, Duration.ofSeconds(1));
        return this;
    }

    public AdmissionConfigBuilder retryAfterMax(Duration v) {
        retryAfterMax = KeyCheck.atLeast(A + "retry_after.max", v, Duration.ofSeconds(1));
        return this;
    }

    public AdmissionConfigBuilder drainGrace(Duration v) {
        drainGrace = KeyCheck.atLeast(A + "drain_grace", v, Duration.ZERO);
        return this;
    }

    /** Class names, highest first: at least one, each once. */
    public AdmissionConfigBuilder priorities(List<String> v) {
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

    public AdmissionConfigBuilder defaultPriority(String v) {
        defaultPriority = KeyCheck.present(A + "default_priority", v);
        return this;
    }

    public AdmissionConfigBuilder apiKeys(Map<String, ApiKey> v) {
        apiKeys = Map.copyOf(KeyCheck.present(A + "api_keys", v));
        return this;
    }

    public AdmissionConfigBuilder requireApiKey(boolean v) {
        requireApiKey = v;
        return this;
    }

    public AdmissionConfigBuilder tenantLimits(TenantLimits v) {
        tenantLimits = KeyCheck.present(A + "tenant_limits", v);
        return this;
    }

    public AdmissionConfigBuilder tokenizer(TokenizerConfig v) {
        tokenizer = KeyCheck.present(A + "tokenizer", v);
        return this;
    }

    public AdmissionConfigBuilder scheduling(SchedulingConfig v) {
        scheduling = KeyCheck.present(A + "scheduling", v);
        return this;
    }

    public AdmissionConfigBuilder prefillRate(PrefillRateConfig v) {
        prefillRate = KeyCheck.present(A + "prefill_rate", v);
        return this;
    }

    public AdmissionConfigBuilder prefillMaxInflightTime(Duration v) {
        prefillMaxInflightTime = KeyCheck.atLeast(A + "prefill.max_inflight_time", v, Duration.ZERO);
        return this;
    }

    /** Settings by class name; a class not named has {@link ClassPolicy#NONE}. */
    public AdmissionConfigBuilder perClass(Map<String, ClassPolicy> v) {
        perClass = Map.copyOf(KeyCheck.present(A + "per_class", v));
        return this;
    }

    /** Queue updates for exactly these classes (their other settings kept). */
    public AdmissionConfigBuilder queueUpdateClasses(java.util.Set<String> v) {
        KeyCheck.present(A + "per_class", v);
        Map<String, ClassPolicy> next = new java.util.HashMap<>(perClass);
        next.replaceAll((name, p) -> new ClassPolicy(false, p.maxTokensCeiling(), p.onExcess(), p.defaultMaxTokens()));
        for (String c : v) {
            ClassPolicy p = next.getOrDefault(c, ClassPolicy.NONE);
            next.put(c, new ClassPolicy(true, p.maxTokensCeiling(), p.onExcess(), p.defaultMaxTokens()));
        }
        perClass = Map.copyOf(next);
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
        for (String c : perClass.keySet()) {
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
                perClass);
    }
}
