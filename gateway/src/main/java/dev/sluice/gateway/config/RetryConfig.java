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
}
