package dev.sluice.gateway.metrics;

import java.time.Duration;

/**
 * Histogram buckets chosen for LLM serving, where a latency is anything from milliseconds (a
 * rejection, one decode step) to minutes (a long generation, a prefill queue under overload):
 * 16 fixed buckets instead of Micrometer's ~70 generic ones, so that {@code histogram_quantile}
 * is meaningful and the series count stays small.
 */
final class LlmBuckets {
    static final Duration[] LATENCY = {
            Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
            Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
            Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(20),
            Duration.ofSeconds(30), Duration.ofSeconds(60), Duration.ofSeconds(120), Duration.ofSeconds(300)};

    private LlmBuckets() {
    }
}
