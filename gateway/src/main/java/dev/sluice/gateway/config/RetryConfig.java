package dev.sluice.gateway.config;

import java.time.Duration;

/**
 * Retries of a request on another prefill/decode pair, only while nothing has reached the client
 * and only after failures that are safe to retry (see {@code docs/reliability.md}).
 *
 * @param maxRetries  attempts after the first one
 * @param backoffBase wait before the first retry; doubled for each further one
 * @param backoffMax  cap of that wait
 * @param jitter      the wait is drawn from [(1 - jitter) x backoff, backoff]
 */
public record RetryConfig(int maxRetries, Duration backoffBase, Duration backoffMax, double jitter) {

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().maxRetries(maxRetries).backoffBase(backoffBase).backoffMax(backoffMax).jitter(jitter);
    }

    /** Checks each value as {@code retries:} does; the cap is checked against the base in {@link #build}. */
    public static final class Builder {
        private Integer maxRetries;
        private Duration backoffBase;
        private Duration backoffMax;
        private Double jitter;

        private Builder() {
        }

        public Builder maxRetries(int v) {
            maxRetries = KeyCheck.in("retries.max_retries", v, 0, 10);
            return this;
        }

        public Builder backoffBase(Duration v) {
            backoffBase = KeyCheck.atLeast("retries.backoff_base", v, Duration.ZERO);
            return this;
        }

        public Builder backoffMax(Duration v) {
            backoffMax = KeyCheck.atLeast("retries.backoff_max", v, Duration.ZERO);
            return this;
        }

        public Builder jitter(double v) {
            jitter = KeyCheck.in("retries.jitter", v, 0, 1);
            return this;
        }

        public RetryConfig build() {
            Duration base = KeyCheck.set("retries.backoff_base", backoffBase);
            Duration max = KeyCheck.atLeast("retries.backoff_max", KeyCheck.set("retries.backoff_max", backoffMax),
                    "retries.backoff_base", base);
            return new RetryConfig(KeyCheck.set("retries.max_retries", maxRetries), base, max,
                    KeyCheck.set("retries.jitter", jitter));
        }
    }
}
