package dev.sluice.gateway.config;

import dev.sluice.gateway.config.AdmissionConfig.ApiKey;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** The {@code admission:} section: limits, priorities, API keys, token counting. */
final class AdmissionConfigReader {
    static final long DEFAULT_MAX_PENDING_TOKENS = 131_072;

    private AdmissionConfigReader() {
    }

    static AdmissionConfig read(ConfigNode n) {
        n.allowOnly(Set.of("max_queued_requests", "max_pending_tokens", "queue_timeout", "max_request_tokens", "prefill",
                "decode", "initial_prefill_tokens_per_second", "retry_after", "drain_grace", "priorities",
                "default_priority", "api_keys", "tokenizer"));
        int maxQueued = n.child("max_queued_requests").intIn(32, 0, 1_000_000);
        long maxPending = n.child("max_pending_tokens").longIn(DEFAULT_MAX_PENDING_TOKENS, 1, Long.MAX_VALUE / 4);
        long maxRequest = n.child("max_request_tokens").longIn(maxPending, 1, Long.MAX_VALUE / 4);
        if (maxRequest > maxPending) {
            throw n.child("max_request_tokens").fail(String.valueOf(maxRequest),
                    "<= admission.max_pending_tokens (" + maxPending + "): a larger prompt could never be admitted");
        }
        ConfigNode prefill = n.child("prefill").allowOnly(Set.of("max_inflight_requests", "max_inflight_tokens"));
        ConfigNode decode = n.child("decode").allowOnly(Set.of("max_inflight_streams"));
        ConfigNode retry = n.child("retry_after").allowOnly(Set.of("min", "max"));
        Duration retryMin = retry.child("min").durationAtLeast(Duration.ofSeconds(1), Duration.ofSeconds(1));
        Duration retryMax = retry.child("max").durationAtLeast(Duration.ofSeconds(60), retryMin);
        List<String> priorities = priorities(n.child("priorities"));
        String defaultPriority = n.child("default_priority").text(priorities.size() > 1 ? priorities.get(1) : priorities.get(0));
        if (!priorities.contains(defaultPriority)) {
            throw n.child("default_priority").fail(defaultPriority, "one of " + priorities);
        }
        return new AdmissionConfig(maxQueued, maxPending,
                n.child("queue_timeout").durationAtLeast(Duration.ofSeconds(30), Duration.ofMillis(1)),
                maxRequest,
                prefill.child("max_inflight_requests").intIn(4, 1, 100_000),
                prefill.child("max_inflight_tokens").longIn(32_768, 1, Long.MAX_VALUE / 4),
                decode.child("max_inflight_streams").intIn(256, 1, 1_000_000),
                n.child("initial_prefill_tokens_per_second").doubleAtLeast(8_000, 1),
                retryMin, retryMax,
                n.child("drain_grace").durationAtLeast(Duration.ofSeconds(30), Duration.ZERO),
                priorities, defaultPriority, apiKeys(n.child("api_keys"), priorities),
                tokenizer(n.child("tokenizer")));
    }

    private static List<String> priorities(ConfigNode n) {
        if (n.isMissing()) {
            return List.of("high", "normal", "low");
        }
        List<String> out = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (ConfigNode item : n.items()) {
            String name = item.requiredText();
            if (!seen.add(name)) {
                throw item.fail(name, "distinct class names");
            }
            out.add(name);
        }
        if (out.isEmpty()) {
            throw n.fail("[]", "at least one priority class, highest first");
        }
        return out;
    }

    private static Map<String, ApiKey> apiKeys(ConfigNode n, List<String> priorities) {
        Map<String, ApiKey> out = new LinkedHashMap<>();
        for (String key : n.keys()) {
            ConfigNode entry = n.child(key).allowOnly(Set.of("tenant", "priority"));
            String priority = entry.child("priority").text(null);
            if (priority != null && !priorities.contains(priority)) {
                throw entry.child("priority").fail(priority, "one of " + priorities);
            }
            out.put(key, new ApiKey(entry.child("tenant").text(key.length() > 8 ? key.substring(0, 8) : key), priority));
        }
        return out;
    }

    private static TokenizerConfig tokenizer(ConfigNode n) {
        n.allowOnly(Set.of("path", "initial_bytes_per_token", "chat_tokens_per_message", "threads"));
        String path = n.child("path").text(null);
        return new TokenizerConfig(Optional.ofNullable(path).map(Path::of),
                n.child("initial_bytes_per_token").doubleAtLeast(4.0, 0.5),
                n.child("chat_tokens_per_message").intIn(4, 0, 1000),
                n.child("threads").intIn(2, 1, 64));
    }
}
