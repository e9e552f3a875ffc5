package dev.sluice.gateway.config;

import java.time.Duration;

/** Reads {@code health:} (active checks, passive ejection, the stall watchdog) and {@code retries:}. */
final class HealthConfigReader {
    private HealthConfigReader() {
    }

    static HealthConfig health(ConfigNode n) {
        n.allowOnly("interval", "timeout", "unhealthy_threshold", "healthy_threshold", "generate_interval",
                "generate_timeout", "decode_max_kv_usage", "passive", "watchdog", "stall_panic");
        return HealthConfig.builder()
                .interval(n.child("interval", "GET /health on every worker this often.")
                        .durationAtLeast(Duration.ofSeconds(2), Duration.ofMillis(50)))
                .timeout(n.child("timeout",
                        "A /health slower than this fails. SGLang's /health runs a one-token generation "
                        + "and polls for it once a second (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION, on by default): "
                        + "it never answers in under ~1 s, and gives its own 503 after 20 s (HEALTH_CHECK_TIMEOUT); "
                        + "the default waits for that verdict.")
                        .durationAtLeast(HealthConfig.DEFAULT_CHECK_TIMEOUT, Duration.ofMillis(10)))
                .unhealthyThreshold(n.child("unhealthy_threshold",
                        "Consecutive failed checks (of one kind) that eject a worker.")
                        .intIn(2, 1, 100))
                .healthyThreshold(n.child("healthy_threshold",
                        "Consecutive passing checks (of that kind) that bring an ejected worker "
                        + "back; a new worker enters rotation at its first passing /health.").intIn(2, 1, 100))
                .generateInterval(n.child("generate_interval",
                        "GET /health_generate (a real one-token generation: catches a stuck "
                        + "scheduler that /health misses) this often; 0s = off. A request that sees a worker stall "
                        + "triggers one at once; if that fails too, the worker is ejected at once.")
                        .durationAtLeast(Duration.ofSeconds(10), Duration.ZERO))
                .generateTimeout(n.child("generate_timeout",
                        "A /health_generate slower than this fails (SGLang answers it "
                        + "itself within HEALTH_CHECK_TIMEOUT, 20 s: 503 when nothing came out of its scheduler).")
                        .durationAtLeast(HealthConfig.DEFAULT_CHECK_TIMEOUT, Duration.ofMillis(10)))
                .decodeMaxKvUsage(n.child("decode_max_kv_usage",
                        "A decode reporting KV token usage (sglang:token_usage) above this "
                        + "is degraded: no new streams until it drops. Stale or missing telemetry never degrades a "
                        + "worker.").doubleIn(0.98, 0.01, 1.0, "a fraction in (0, 1]"))
                .passive(passive(n.child("passive",
                        "Outlier detection from live traffic: connect errors, 5xx, timeouts, KV "
                        + "transfer failures, stalls (a client's 4xx never counts).")))
                .watchdog(watchdog(n.child("watchdog",
                        "The stall watchdog: a request that stops making progress is aborted on "
                        + "both halves (sluice_aborts_total{cause=\"stall\"}), counted against its worker, and retried "
                        + "elsewhere when nothing reached the client yet. A started stream that goes silent: "
                        + "timeouts.idle_stream.")))
                .stallPanic(stallPanic(n.child("stall_panic",
                        "A confirmed stall (two in a row with no progress between) on a role's last worker while its "
                        + "health checks pass (a silent stall: SGLang's checks never touch the KV transfer) makes it "
                        + "suspect: /readiness 503, no client request goes to it (each gets a 503 at once, Retry-After "
                        + "until the next probe), and the gateway probes the pair with its own one-token generation "
                        + "through both halves, spaced by an exponential back-off with jitter, until one succeeds. "
                        + "docs/reliability.md.")))
                .build();
    }

    private static HealthConfig.StallPanic stallPanic(ConfigNode n) {
        n.allowOnly("enabled", "probe_timeout", "probe_interval", "probe_max_interval");
        HealthConfig.StallPanic d = HealthConfig.StallPanic.DEFAULT;
        boolean enabled = n.child("enabled", "Off: the last worker stays in rotation and every request waits out the "
                + "watchdog.").bool(d.enabled());
        Duration timeout = n.child("probe_timeout", "A probe with no answer by then has failed (it is the gateway's own "
                + "request: a prompt of a few tokens and one output token).")
                .durationAtLeast(d.probeTimeout(), Duration.ofMillis(10));
        Duration interval = n.child("probe_interval", "The first probe starts this long after the verdict; each failed "
                + "probe doubles the wait (jittered down by up to 20%), up to probe_max_interval.")
                .durationAtLeast(d.probeInterval(), Duration.ofMillis(10));
        Duration max = n.child("probe_max_interval", "The longest time between two probes' starts: a pair that heals "
                + "serves again within it.").durationAtLeast(d.probeMaxInterval(), interval,
                "health.stall_panic.probe_interval");
        return new HealthConfig.StallPanic(enabled, timeout, interval, max);
    }

    private static HealthConfig.Passive passive(ConfigNode n) {
        n.allowOnly("window", "consecutive_failures", "failure_ratio", "min_requests", "base_ejection",
                "max_ejection", "half_open_requests", "max_ejected_percent");
        Duration window = n.child("window", "Outcomes older than this are forgotten.")
                .durationAtLeast(Duration.ofSeconds(30), Duration.ofMillis(100));
        int consecutive = n.child("consecutive_failures", "Failures in a row that eject a worker.").intIn(3, 1, 1000);
        double ratio = n.child("failure_ratio", "Share of failures in the window that ejects, once the window holds "
                + "min_requests outcomes.").doubleIn(0.5, 0.01, 1.0, "a fraction in (0, 1]");
        int minRequests = n.child("min_requests", "Outcomes the window must hold before failure_ratio counts.")
                .intIn(10, 1, 100_000);
        Duration base = n.child("base_ejection", "The n-th ejection of a worker lasts n x base_ejection, at most "
                + "max_ejection.").durationAtLeast(Duration.ofSeconds(10), Duration.ofMillis(10));
        return HealthConfig.Passive.builder()
                .window(window)
                .consecutiveFailures(consecutive)
                .failureRatio(ratio)
                .minRequests(minRequests)
                .baseEjection(base)
                .maxEjection(n.child("max_ejection", "Longest ejection; then a half-open trial.")
                        .durationAtLeast(Duration.ofMinutes(5), base, "health.passive.base_ejection"))
                .halfOpenRequests(n.child("half_open_requests",
                        "Trial requests after an ejection; all succeed: healthy, one fails: "
                        + "ejected again (longer).").intIn(2, 1, 1000))
                .maxEjectedPercent(n.child("max_ejected_percent",
                        "At most this share of a role is ejected on passive signals, and never "
                        + "its last available worker (failed active checks eject regardless: a dead worker is dead).")
                        .intIn(100, 0, 100))
                .build();
    }

    private static HealthConfig.Watchdog watchdog(ConfigNode n) {
        n.allowOnly("prefill_factor", "prefill_floor", "first_token_after_prefill");
        return HealthConfig.Watchdog.builder()
                .prefillFactor(n.child("prefill_factor",
                        "A prefill is stalled past this many times its expected time (prompt "
                        + "tokens ahead of it and its own, over the measured prefill rate)...").doubleAtLeast(3.0, 1.0))
                .prefillFloor(n.child("prefill_floor", "...and never sooner than this after dispatch.")
                        .durationAtLeast(Duration.ofSeconds(5), Duration.ofMillis(10)))
                .firstTokenAfterPrefill(n.child("first_token_after_prefill",
                        "Streamed: longest wait for the decode's first token once the "
                        + "prefill finished (the KV is there: it should be quick). A stream then waiting for "
                        + "a slot in a decode rank whose started streams fill its running cap waits again "
                        + "(docs/admission.md, \"Decode lookahead\").")
                        .durationAtLeast(Duration.ofSeconds(3), Duration.ofMillis(10)))
                .build();
    }

    static RetryConfig retries(ConfigNode n) {
        n.allowOnly("max_retries", "backoff_base", "backoff_max", "jitter");
        int max = n.child("max_retries", "Attempts after the first.").intIn(2, 0, 10);
        Duration base = n.child("backoff_base", "Wait before the first retry; doubled for each further one, up to "
                + "backoff_max.").durationAtLeast(Duration.ofMillis(50), Duration.ZERO);
        Duration backoffMax = n.child("backoff_max", "Longest wait before a retry.")
                .durationAtLeast(Duration.ofSeconds(1), base, "retries.backoff_base");
        double jitter = n.child("jitter", "The wait is drawn from [(1 - jitter) x backoff, backoff].")
                .doubleIn(0.5, 0.0, 1.0, "a fraction in [0, 1]");
        return RetryConfig.builder().maxRetries(max).backoffBase(base).backoffMax(backoffMax).jitter(jitter).build();
    }
}
