package dev.sluice.gateway.config;

import java.time.Duration;

/**
 * How the gateway decides a worker's state: active checks, passive signals from live traffic,
 * the stall watchdog and telemetry. Defaults and meaning: {@code config/gateway.yaml} and
 * {@code docs/reliability.md}.
 *
 * @param interval           {@code GET /health} period
 * @param timeout            one {@code /health} check slower than this fails
 * @param unhealthyThreshold consecutive failed checks (of either kind) that eject a worker
 * @param healthyThreshold   consecutive passing checks that bring an actively ejected worker back
 * @param generateInterval   {@code GET /health_generate} period (a real one-token generation); zero: off
 * @param generateTimeout    one {@code /health_generate} slower than this fails
 * @param decodeMaxKvUsage   a decode whose reported KV token usage is above this takes no new streams
 */
public record HealthConfig(Duration interval, Duration timeout, int unhealthyThreshold, int healthyThreshold,
                           Duration generateInterval, Duration generateTimeout, double decodeMaxKvUsage,
                           Passive passive, Watchdog watchdog) {

    /**
     * Default timeout of both checks: past SGLang's own {@code HEALTH_CHECK_TIMEOUT} (20 s,
     * sgl-project/sglang {@code python/sglang/srt/entrypoints/http_server.py}, {@code health_generate}),
     * so that a busy worker's check ends with the server's own verdict rather than the gateway's
     * impatience.
     */
    public static final Duration DEFAULT_CHECK_TIMEOUT = Duration.ofSeconds(25);

    /** SGLang's {@code /health} polls its one-token request once a second: no answer comes sooner. */
    public static final Duration SGLANG_HEALTH_MINIMUM = Duration.ofSeconds(1);

    /** SGLang's {@code HEALTH_CHECK_TIMEOUT}: its {@code /health} answers 503 itself after this long. */
    public static final Duration SGLANG_HEALTH_CHECK_TIMEOUT = Duration.ofSeconds(20);

    /**
     * Outlier detection from live traffic (connect errors, 5xx, timeouts, KV transfer failures,
     * stalls), per worker over a sliding window.
     *
     * @param window              how far back outcomes count
     * @param consecutiveFailures failures in a row that eject
     * @param failureRatio        share of failures in the window that ejects, once it holds {@code minRequests}
     * @param minRequests         outcomes the window must hold before the ratio counts
     * @param baseEjection        first ejection lasts this long; the n-th lasts n times as long
     * @param maxEjection         cap of an ejection's length
     * @param halfOpenRequests    trial requests after an ejection; all must succeed to be healthy again
     * @param maxEjectedPercent   most of a role that passive signals may eject; never the last available worker
     */
    public record Passive(Duration window, int consecutiveFailures, double failureRatio, int minRequests,
                          Duration baseEjection, Duration maxEjection, int halfOpenRequests, int maxEjectedPercent) {
    }

    /**
     * The stall watchdog: a request that stops making progress is aborted on both halves.
     *
     * @param prefillFactor          a prefill is stalled past this many times its expected time
     *                               (tokens ahead of it and its own, over the measured prefill rate)
     * @param prefillFloor           ... and never sooner than this after dispatch
     * @param firstTokenAfterPrefill longest wait for the decode's first token once the prefill finished
     */
    public record Watchdog(double prefillFactor, Duration prefillFloor, Duration firstTokenAfterPrefill) {
    }
}
