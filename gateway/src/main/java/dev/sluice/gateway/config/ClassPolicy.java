package dev.sluice.gateway.config;

import java.util.Objects;

/**
 * What one priority class is allowed and given (YAML {@code admission.per_class.<class>:}): whether
 * its streamed requests hear where they stand while they wait, the most completion tokens one of
 * its requests may ask for, what happens to a request that asks for more, and what a request that
 * names no limit is given.
 *
 * @param queueUpdates     its streamed requests get SSE queue comments, as with {@code X-Sluice-Queue-Updates: 1}
 * @param maxTokensCeiling the most {@code max_tokens} (or {@code max_completion_tokens},
 *                         {@code sampling_params.max_new_tokens}) one request may ask for; 0: no ceiling
 * @param onExcess         a request over the ceiling: refused (400) or clamped to it
 * @param defaultMaxTokens given to a request that names no limit; 0: none (the worker's own default)
 */
public record ClassPolicy(boolean queueUpdates, long maxTokensCeiling, OnExcess onExcess, long defaultMaxTokens) {
    /** The largest value of the token-count fields the gateway accepts: a JSON integer of 32 bits. */
    public static final long MAX_TOKENS_LIMIT = Integer.MAX_VALUE;

    /** Nothing configured: no queue updates, no ceiling, no default. */
    public static final ClassPolicy NONE = new ClassPolicy(false, 0, OnExcess.REFUSE, 0);

    /** A request that asks for more completion tokens than its class's ceiling. */
    public enum OnExcess {
        /** 400 {@code max_tokens_too_large}, naming the ceiling. */
        REFUSE,
        /** Forwarded with its limit lowered to the ceiling. */
        CLAMP
    }

    public ClassPolicy {
        Objects.requireNonNull(onExcess, "onExcess");
        KeyCheck.atLeast("admission.per_class.max_tokens_ceiling", maxTokensCeiling, 0L);
        KeyCheck.atLeast("admission.per_class.default_max_tokens", defaultMaxTokens, 0L);
        if (maxTokensCeiling > MAX_TOKENS_LIMIT || defaultMaxTokens > MAX_TOKENS_LIMIT) {
            throw KeyCheck.rejected("admission.per_class", maxTokensCeiling + "/" + defaultMaxTokens,
                    "max_tokens_ceiling and default_max_tokens <= " + MAX_TOKENS_LIMIT);
        }
        if (maxTokensCeiling > 0 && defaultMaxTokens > maxTokensCeiling) {
            throw KeyCheck.rejected("admission.per_class.default_max_tokens", String.valueOf(defaultMaxTokens),
                    "<= max_tokens_ceiling (" + maxTokensCeiling + ")");
        }
    }

    /** Whether it changes anything about a request's completion tokens. */
    public boolean limitsTokens() {
        return maxTokensCeiling > 0 || defaultMaxTokens > 0;
    }
}
