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
 * @param stallPanic         what a stall on a role's last worker does (the panic mode)
 */
public record HealthConfig(Duration interval, Duration timeout, int unhealthyThreshold, int healthyThreshold,
                           Duration generateInterval, Duration generateTimeout, double decodeMaxKvUsage,
                           Passive passive, Watchdog watchdog, StallPanic stallPanic) {

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

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().interval(interval).timeout(timeout).unhealthyThreshold(unhealthyThreshold)
                .healthyThreshold(healthyThreshold).generateInterval(generateInterval).generateTimeout(generateTimeout)
                .decodeMaxKvUsage(decodeMaxKvUsage).passive(passive).watchdog(watchdog).stallPanic(stallPanic);
    }

    /** Checks each value with the lower bounds of {@code health:}'s reader. */
    public static final class Builder {
        private Duration interval;
        private Duration timeout;
        private Integer unhealthyThreshold;
        private Integer healthyThreshold;
        private Duration generateInterval;
        private Duration generateTimeout;
        private Double decodeMaxKvUsage;
        private Passive passive;
        private Watchdog watchdog;
        private StallPanic stallPanic = StallPanic.DEFAULT;

        private Builder() {
        }

        public Builder interval(Duration v) {
            interval = KeyCheck.atLeast("health.interval", v, Duration.ofMillis(50));
            return this;
        }

        public Builder timeout(Duration v) {
            timeout = KeyCheck.atLeast("health.timeout", v, Duration.ofMillis(10));
            return this;
        }

        public Builder unhealthyThreshold(int v) {
            unhealthyThreshold = KeyCheck.atLeast("health.unhealthy_threshold", v, 1);
            return this;
        }

        public Builder healthyThreshold(int v) {
            healthyThreshold = KeyCheck.atLeast("health.healthy_threshold", v, 1);
            return this;
        }

        /** Zero: the {@code /health_generate} checks are off. */
        public Builder generateInterval(Duration v) {
            generateInterval = KeyCheck.atLeast("health.generate_interval", v, Duration.ZERO);
            return this;
        }

        public Builder generateTimeout(Duration v) {
            generateTimeout = KeyCheck.atLeast("health.generate_timeout", v, Duration.ofMillis(10));
            return this;
        }

        public Builder decodeMaxKvUsage(double v) {
            decodeMaxKvUsage = KeyCheck.in("health.decode_max_kv_usage", v, 0.01, 1);
            return this;
        }

        public Builder passive(Passive v) {
            passive = KeyCheck.present("health.passive", v);
            return this;
        }

        public Builder watchdog(Watchdog v) {
            watchdog = KeyCheck.present("health.watchdog", v);
            return this;
        }

        public Builder stallPanic(StallPanic v) {
            stallPanic = KeyCheck.present("health.stall_panic", v);
            return this;
        }

        public HealthConfig build() {
            return new HealthConfig(KeyCheck.set("health.interval", interval), KeyCheck.set("health.timeout", timeout),
                    KeyCheck.set("health.unhealthy_threshold", unhealthyThreshold),
                    KeyCheck.set("health.healthy_threshold", healthyThreshold),
                    KeyCheck.set("health.generate_interval", generateInterval),
                    KeyCheck.set("health.generate_timeout", generateTimeout),
                    KeyCheck.set("health.decode_max_kv_usage", decodeMaxKvUsage), KeyCheck.set("health.passive", passive),
                    KeyCheck.set("health.watchdog", watchdog), stallPanic);
        }
    }

    /**
     * The panic mode: a confirmed stall on a role's last worker (no other to route to) makes it
     * suspect: no client request goes to it; each is refused at once (503, Retry-After until the
     * next probe) while the gateway probes the pair with its own small generation, spaced by an
     * exponential back-off with jitter, until one succeeds.
     *
     * @param enabled          off: the last worker stays in rotation and every request waits out the watchdog
     * @param probeTimeout     a probe with no answer by then has failed (judged fast, so service resumes soon)
     * @param probeInterval    the first probe comes this long after the verdict; each failure doubles the wait
     * @param probeMaxInterval the longest wait between two probes' starts (so a healed pair serves again within it)
     */
    public record StallPanic(boolean enabled, Duration probeTimeout, Duration probeInterval,
                             Duration probeMaxInterval) {
        public static final StallPanic DEFAULT = new StallPanic(true, Duration.ofSeconds(3), Duration.ofSeconds(1),
                Duration.ofSeconds(10));

        public StallPanic {
            KeyCheck.atLeast("health.stall_panic.probe_timeout", KeyCheck.present("health.stall_panic.probe_timeout",
                    probeTimeout), Duration.ofMillis(10));
            KeyCheck.atLeast("health.stall_panic.probe_interval", KeyCheck.present(
                    "health.stall_panic.probe_interval", probeInterval), Duration.ofMillis(10));
            KeyCheck.atLeast("health.stall_panic.probe_max_interval", KeyCheck.present(
                    "health.stall_panic.probe_max_interval", probeMaxInterval), "health.stall_panic.probe_interval",
                    probeInterval);
        }

        /** Panic mode on or off with the default probing. */
        public StallPanic withEnabled(boolean on) {
            return new StallPanic(on, probeTimeout, probeInterval, probeMaxInterval);
        }
    }

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

        public static Builder builder() {
            return new Builder();
        }

        public Builder toBuilder() {
            return builder().window(window).consecutiveFailures(consecutiveFailures).failureRatio(failureRatio)
                    .minRequests(minRequests).baseEjection(baseEjection).maxEjection(maxEjection)
                    .halfOpenRequests(halfOpenRequests).maxEjectedPercent(maxEjectedPercent);
        }

        /** Checks each value as {@code health.passive:} does; the longest ejection against the first in build(). */
        public static final class Builder {
            private static final String P = "health.passive.";
            private Duration window;
            private Integer consecutiveFailures;
            private Double failureRatio;
            private Integer minRequests;
            private Duration baseEjection;
            private Duration maxEjection;
            private Integer halfOpenRequests;
            private Integer maxEjectedPercent;

            private Builder() {
            }

            public Builder window(Duration v) {
                window = KeyCheck.atLeast(P + "window", v, Duration.ofMillis(100));
                return this;
            }

            public Builder consecutiveFailures(int v) {
                consecutiveFailures = KeyCheck.atLeast(P + "consecutive_failures", v, 1);
                return this;
            }

            public Builder failureRatio(double v) {
                failureRatio = KeyCheck.in(P + "failure_ratio", v, 0.01, 1);
                return this;
            }

            public Builder minRequests(int v) {
                minRequests = KeyCheck.atLeast(P + "min_requests", v, 1);
                return this;
            }

            public Builder baseEjection(Duration v) {
                baseEjection = KeyCheck.atLeast(P + "base_ejection", v, Duration.ofMillis(10));
                return this;
            }

            public Builder maxEjection(Duration v) {
                maxEjection = KeyCheck.atLeast(P + "max_ejection", v, Duration.ofMillis(10));
                return this;
            }

            public Builder halfOpenRequests(int v) {
                halfOpenRequests = KeyCheck.atLeast(P + "half_open_requests", v, 1);
                return this;
            }

            /** 0: passive signals never eject (failed active checks still do). */
            public Builder maxEjectedPercent(int v) {
                maxEjectedPercent = KeyCheck.in(P + "max_ejected_percent", v, 0, 100);
                return this;
            }

            public Passive build() {
                Duration base = KeyCheck.set(P + "base_ejection", baseEjection);
                Duration max = KeyCheck.atLeast(P + "max_ejection", KeyCheck.set(P + "max_ejection", maxEjection),
                        P + "base_ejection", base);
                return new Passive(KeyCheck.set(P + "window", window),
                        KeyCheck.set(P + "consecutive_failures", consecutiveFailures),
                        KeyCheck.set(P + "failure_ratio", failureRatio), KeyCheck.set(P + "min_requests", minRequests),
                        base, max, KeyCheck.set(P + "half_open_requests", halfOpenRequests),
                        KeyCheck.set(P + "max_ejected_percent", maxEjectedPercent));
            }
        }
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

        public static Builder builder() {
            return new Builder();
        }

        public Builder toBuilder() {
            return builder().prefillFactor(prefillFactor).prefillFloor(prefillFloor)
                    .firstTokenAfterPrefill(firstTokenAfterPrefill);
        }

        /** Checks each value as {@code health.watchdog:} does (the two durations are easily swapped). */
        public static final class Builder {
            private Double prefillFactor;
            private Duration prefillFloor;
            private Duration firstTokenAfterPrefill;

            private Builder() {
            }

            public Builder prefillFactor(double v) {
                prefillFactor = KeyCheck.atLeast("health.watchdog.prefill_factor", v, 1.0);
                return this;
            }

            public Builder prefillFloor(Duration v) {
                prefillFloor = KeyCheck.atLeast("health.watchdog.prefill_floor", v, Duration.ofMillis(10));
                return this;
            }

            public Builder firstTokenAfterPrefill(Duration v) {
                firstTokenAfterPrefill = KeyCheck.atLeast("health.watchdog.first_token_after_prefill", v,
                        Duration.ofMillis(10));
                return this;
            }

            public Watchdog build() {
                return new Watchdog(KeyCheck.set("health.watchdog.prefill_factor", prefillFactor),
                        KeyCheck.set("health.watchdog.prefill_floor", prefillFloor),
                        KeyCheck.set("health.watchdog.first_token_after_prefill", firstTokenAfterPrefill));
            }
        }
    }
}
