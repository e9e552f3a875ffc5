package dev.sluice.gateway.config;

import dev.sluice.gateway.config.AdmissionConfig.ApiKey;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimit;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import dev.sluice.gateway.state.StateDirectory;
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
    static final long DEFAULT_MAX_PENDING_TOKENS = 262_144;
    private static final List<String> DEFAULT_PRIORITIES = List.of("high", "normal", "low");

    private AdmissionConfigReader() {
    }

    static AdmissionConfig read(ConfigNode n) {
        n.allowOnly("max_queued_requests", "max_pending_tokens", "queue_timeout", "max_request_tokens", "prefill",
                "decode", "initial_prefill_tokens_per_second", "retry_after", "drain_grace", "priorities",
                "default_priority", "api_keys", "require_api_key", "tenant_limits", "tokenizer", "scheduling",
                "prefill_rate", "per_class");
        int maxQueued = n.child("max_queued_requests", "Requests waiting in the gateway's queue (not yet "
                + "dispatched); past it, 429 queue_full.").intIn(32, 0, 1_000_000);
        long maxPending = n.child("max_pending_tokens", "Prompt tokens admitted and not yet prefilled (queued and in "
                + "prefill), all prefill workers together; about target TTFT x measured prefill tokens/s.")
                .longIn(DEFAULT_MAX_PENDING_TOKENS, 1, Long.MAX_VALUE / 4);
        Duration queueTimeout = n.child("queue_timeout", "First-token deadline of a request that sends no X-Sluice-Deadline-Ms (a "
                + "client's own deadline replaces it, longer or shorter); past it, 429.")
                .durationAtLeast(Duration.ofSeconds(30), Duration.ofMillis(1));
        ConfigNode maxRequestNode = n.child("max_request_tokens", "One prompt larger than this can never run: 413 "
                + "request_too_large at once.").defaultIs("admission.max_pending_tokens")
                .rule("<= admission.max_pending_tokens");
        long maxRequest = maxRequestNode.longIn(maxPending, 1, Long.MAX_VALUE / 4);
        if (maxRequest > maxPending) {
            maxRequestNode.reject(String.valueOf(maxRequest),
                    "<= admission.max_pending_tokens (" + maxPending + "): a larger prompt could never be admitted");
            maxRequest = maxPending;
        }
        ConfigNode prefill = n.child("prefill", "Each prefill worker's window.")
                .allowOnly("max_inflight_requests", "max_inflight_tokens", "max_inflight_time");
        ConfigNode decode = n.child("decode", "Each decode worker's window.").allowOnly("max_inflight_streams");
        int prefillRequests = prefill.child("max_inflight_requests", "Requests dispatched to one prefill worker and "
                + "not yet prefilled.").intIn(4, 1, 100_000);
        long prefillTokens = prefill.child("max_inflight_tokens", "Their prompt tokens (a single larger request still "
                + "goes, alone).").longIn(32_768, 1, Long.MAX_VALUE / 4);
        Duration prefillTime = prefill.child("max_inflight_time", "The window in time: a prefill worker that holds "
                + "work is given another request only while that work would be done within this at its known rate "
                + "(measured, or a prior); while its rate is only the guess, a second request waits behind the first "
                + "and more only while what it holds plus the new prompt fit in this at "
                + "initial_prefill_tokens_per_second. The rest waits in the gateway's queue, where deadlines "
                + "and classes order it. A few seconds keeps the worker busy (the next request is there before it runs "
                + "dry); 0s: only the request and token limits.")
                .durationAtLeast(AdmissionConfig.DEFAULT_PREFILL_MAX_INFLIGHT_TIME, Duration.ZERO);
        int decodeStreams = decode.child("max_inflight_streams", "Requests on one decode worker, until they end; a worker routed "
                + "per data-parallel rank gives each rank its share (divided by the ranks, rounded up). Above the "
                + "worker's own running cap a rank's extra streams are prefilled while it is busy and wait in the "
                + "decode, KV ready: ranks x (cap per rank + 2) keeps the ranks full when requests wait "
                + "(docs/admission.md, \"Decode lookahead\").")
                .intIn(256, 1, 1_000_000);
        double initialRate = n.child("initial_prefill_tokens_per_second", "Drain-rate guess until one is measured "
                + "(used by Retry-After).").doubleAtLeast(8_000, 1);
        ConfigNode retry = n.child("retry_after", "Clamp of every computed Retry-After.").allowOnly("min", "max");
        Duration retryMin = retry.child("min", "Shortest Retry-After.")
                .durationAtLeast(Duration.ofSeconds(1), Duration.ofSeconds(1));
        Duration retryMax = retry.child("max", "Longest Retry-After.")
                .durationAtLeast(Duration.ofSeconds(60), retryMin, "admission.retry_after.min");
        Duration drainGrace = n.child("drain_grace", "On SIGTERM: stop admitting (503 draining), let queued and "
                + "in-flight requests finish this long, then abort the rest (both halves) and exit 0.")
                .durationAtLeast(Duration.ofSeconds(30), Duration.ZERO);
        List<String> priorities = priorities(n.child("priorities", "Priority classes, highest first; the header "
                + "X-Sluice-Priority picks one."));
        ConfigNode defaultNode = n.child("default_priority", "Class of a request that names none.")
                .defaultIs("the second of admission.priorities (normal), or the only one").rule("one of admission.priorities");
        String defaultPriority = defaultNode.text(priorities.size() > 1 ? priorities.get(1) : priorities.get(0));
        if (!priorities.contains(defaultPriority)) {
            defaultNode.reject(defaultPriority, "one of " + priorities);
            defaultPriority = priorities.size() > 1 ? priorities.get(1) : priorities.get(0);
        }
        Map<String, ApiKey> apiKeys = apiKeys(n.child("api_keys", "Client API keys, by name: Authorization: Bearer "
                + "<key> gives the key's tenant and class (a header may lower the class a key grants, never raise it). "
                + "Each key is configured as its SHA-256, never in clear: printf %s \"$KEY\" | sha256sum, or "
                + "sluice-gateway hash-key."), priorities);
        boolean requireApiKey = requireApiKey(n, apiKeys);
        return AdmissionConfig.builder()
                .maxQueuedRequests(maxQueued)
                .maxPendingTokens(maxPending)
                .queueTimeout(queueTimeout)
                .maxRequestTokens(maxRequest)
                .prefillMaxInflightRequests(prefillRequests)
                .prefillMaxInflightTokens(prefillTokens)
                .prefillMaxInflightTime(prefillTime)
                .decodeMaxInflightStreams(decodeStreams)
                .initialPrefillTokensPerSecond(initialRate)
                .retryAfterMin(retryMin)
                .retryAfterMax(retryMax)
                .drainGrace(drainGrace)
                .priorities(priorities)
                .defaultPriority(defaultPriority)
                .apiKeys(apiKeys)
                .requireApiKey(requireApiKey)
                .tenantLimits(tenantLimits(n.child("tenant_limits", "Per-tenant limits: shares of the queue and of "
                        + "the pending-token budget (work-conserving), and a token rate.")))
                .tokenizer(tokenizer(n.child("tokenizer", "Token counting for admission: exact with a "
                        + "tokenizer.json, else estimated from bytes.")))
                .scheduling(scheduling(n.child("scheduling", "How a class's queue is ordered and how often queued "
                        + "requests are re-judged against their deadlines.")))
                .prefillRate(prefillRate(n.child("prefill_rate", "Each prefill worker's rate before the gateway has "
                        + "measured it: a trusted prior turns the deadline checks on from the first request.")))
                .perClass(perClass(n.child("per_class", "Settings by priority class (a name of "
                        + "admission.priorities)."), priorities))
                .build();
    }

    /** {@code admission.per_class}: each class's settings, one record per class. */
    private static Map<String, ClassPolicy> perClass(ConfigNode perClass, List<String> priorities) {
        Map<String, ClassPolicy> out = new LinkedHashMap<>();
        for (Map.Entry<String, ConfigNode> e : perClass.entries("One class's settings.")) {
            ConfigNode c = e.getValue().allowOnly("queue_updates", "max_tokens_ceiling", "on_excess",
                    "default_max_tokens");
            boolean updates = c.child("queue_updates", "A streamed request of this class gets its 200 at once and "
                    + "SSE comments while it waits (': queue position=N eta_ms=M', then ': queue wait_ms=N'), as with "
                    + "the header X-Sluice-Queue-Updates: 1 (which, as 0, declines them).").bool(false);
            long ceiling = c.child("max_tokens_ceiling", "The most completion tokens one request of this class may "
                    + "ask for (max_tokens, max_completion_tokens, sampling_params.max_new_tokens); past it, on_excess "
                    + "decides. 0: no ceiling.").longIn(0, 0, ClassPolicy.MAX_TOKENS_LIMIT);
            ConfigNode excessNode = c.child("on_excess", "A request over max_tokens_ceiling: refuse (400 "
                    + "max_tokens_too_large, naming the ceiling) or clamp (forwarded with its limit lowered to the "
                    + "ceiling).").rule("refuse or clamp");
            ClassPolicy.OnExcess excess = choice(excessNode, "refuse",
                    Map.of("refuse", ClassPolicy.OnExcess.REFUSE, "clamp", ClassPolicy.OnExcess.CLAMP));
            ConfigNode defaultNode = c.child("default_max_tokens", "Given to a request of this class that names no "
                    + "limit (as max_tokens, or sampling_params.max_new_tokens on /generate), so that its budget and "
                    + "deadline are known. 0: none (the worker's own default).").rule("<= max_tokens_ceiling");
            long def = defaultNode.longIn(0, 0, ClassPolicy.MAX_TOKENS_LIMIT);
            if (ceiling > 0 && def > ceiling) {
                defaultNode.reject(String.valueOf(def), "<= max_tokens_ceiling (" + ceiling + ")");
                def = ceiling;
            }
            if (c.reading().explore()) {
                continue; // the schema's run: "*" stands for any class
            }
            if (!priorities.contains(e.getKey())) {
                c.reject(e.getKey(), "one of admission.priorities " + priorities);
            } else {
                out.put(e.getKey(), new ClassPolicy(updates, ceiling, excess, def));
            }
        }
        return out;
    }

    private static AdmissionConfig.SchedulingConfig scheduling(ConfigNode n) {
        n.allowOnly("order", "review_interval", "shed", "shed_commit_after");
        ConfigNode orderNode = n.child("order", "Within a class (and a tenant's turn in it): edf serves the earliest "
                + "deadline first (X-Sluice-Deadline-Ms, else arrival + queue_timeout); fifo serves arrival order.")
                .rule("edf or fifo");
        AdmissionConfig.QueueOrder o = choice(orderNode, "edf",
                Map.of("edf", AdmissionConfig.QueueOrder.EDF, "fifo", AdmissionConfig.QueueOrder.FIFO));
        Duration review = n.child("review_interval", "Every queued request's predicted first token is checked "
                + "against its deadline at least this often (and at once when the rate or the work ahead changes); "
                + "one that can no longer make it is answered 429 deadline_unreachable.")
                .durationAtLeast(Duration.ofMillis(200), Duration.ofMillis(10));
        ConfigNode shedNode = n.child("shed", "When not all queued requests of a class can make their deadlines, who "
                + "gives way: longest (the longest prompt ahead, when that lets a shorter one in: the most requests "
                + "served, long prompts wait for quieter times; also at the door: when the queue or the token budget is "
                + "full, a newcomer at most half as long takes the place of the longest queued prompt of its class and "
                + "tenant) or "
                + "latest (the one that cannot make it; the queued keep their places).")
                .rule("longest or latest");
        AdmissionConfig.Shed sh = choice(shedNode, "longest",
                Map.of("longest", AdmissionConfig.Shed.LONGEST, "latest", AdmissionConfig.Shed.LATEST));
        Duration commit = n.child("shed_commit_after", "A request queued this long is committed: it no longer gives "
                + "way to later arrivals (never shed for them, never pushed past its deadline by a newcomer of a higher "
                + "class or an earlier deadline: such a newcomer is refused at its door instead, 429 shed, or "
                + "deadline_unreachable when it would be last in line), so that "
                + "the policy's refusals come within about this time of arrival; a committed request is still refused "
                + "when new evidence (a slower rate) says it cannot make its deadline. 0s: never committed.")
                .durationAtLeast(AdmissionConfig.SchedulingConfig.DEFAULT_SHED_COMMIT_AFTER, Duration.ZERO);
        return new AdmissionConfig.SchedulingConfig(o, review, sh, commit);
    }

    /** One of the words of {@code choices} (absent: {@code def}); another is refused, naming the choices. */
    private static <E> E choice(ConfigNode n, String def, Map<String, E> choices) {
        String word = n.text(def);
        E value = choices.get(word);
        if (value == null) {
            n.reject(word, String.join(" or ", new java.util.TreeSet<>(choices.keySet())));
            return choices.get(def);
        }
        return value;
    }

    private static AdmissionConfig.PrefillRateConfig prefillRate(ConfigNode n) {
        n.allowOnly("prior_tokens_per_second", "per_worker", "from_telemetry", "state_file", "early_rejection",
                "calibration");
        Optional<Integer> priorValue = n.child("prior_tokens_per_second", "Prompt tokens per second one prefill "
                + "worker computes (at your typical prompt length); trusted until measured. Absent: none.")
                .optionalInt(1, 100_000_000);
        java.util.OptionalDouble prior = priorValue.isPresent() ? java.util.OptionalDouble.of(priorValue.get())
                : java.util.OptionalDouble.empty();
        Map<String, Double> per = new LinkedHashMap<>();
        for (Map.Entry<String, ConfigNode> e : n.child("per_worker", "Priors by worker URL (as in workers:), "
                + "overriding prior_tokens_per_second.").entries("One worker's prefill tokens per second.")) {
            per.put(e.getKey(), e.getValue().doubleAtLeast(1, 1));
        }
        boolean telemetry = n.child("from_telemetry", "Read the rate from a worker that exports it (SGLang with "
                + "SGLANG_ENABLE_METRICS_DEVICE_TIMER: sglang:realtime_tokens_total{mode=\"prefill_compute\"} over "
                + "sglang:gpu_execution_seconds_total); used when no prior is configured for it.").bool(true);
        String stateSetting = n.child("state_file", "A small JSON file where the measured rates are kept across "
                + "restarts (written every 30 s and at shutdown); read at start as priors. auto: prefill-rates.json in "
                + "$SLUICE_STATE_DIRECTORY, else $STATE_DIRECTORY (systemd's StateDirectory=), else "
                + "$XDG_STATE_HOME/sluice, else ~/.local/state/sluice; none (or SLUICE_STATE_DIRECTORY=none with auto): "
                + "nowhere. An unwritable place is a warning at start, never a failed start.")
                .text(StateDirectory.AUTO);
        Optional<Path> state = StateDirectory.stateFile(stateSetting, n.reading()::env, System.getProperty("user.home"));
        boolean early = n.child("early_rejection", "Refuse a request for its deadline as soon as it cannot be met "
                + "even at the optimistic bound of each prefill worker's rate (the measured rate or the prior, and "
                + "below the tokens sent in the worker's busy period over its busy time), from the first request "
                + "and without a prior; false: only once every rate is measured or a prior, at that rate.").bool(true);
        return new AdmissionConfig.PrefillRateConfig(prior, per, telemetry, state, early,
                calibration(n.child("calibration", "The gateway's own measurement of each prefill (or unified) "
                        + "worker's rate, by its own generation requests, before the worker takes client traffic.")));
    }

    private static PrefillCalibrationConfig calibration(ConfigNode n) {
        n.allowOnly("on_start", "prompt_tokens", "timeout");
        ConfigNode onStart = n.child("on_start", "auto: calibrate a worker that has no trusted rate (no prior "
                + "configured, none from telemetry, none kept from an earlier run or the fleet); always: also one whose "
                + "only rate is a kept one (it may be stale); never: no calibration (predictions wait for the first "
                + "prefills measured). /readiness waits for the calibration of the workers present at start.")
                .rule("auto, always or never");
        PrefillCalibrationConfig.OnStart mode = choice(onStart, "auto", Map.of("auto",
                PrefillCalibrationConfig.OnStart.AUTO, "always", PrefillCalibrationConfig.OnStart.ALWAYS, "never",
                PrefillCalibrationConfig.OnStart.NEVER));
        int tokens = n.child("prompt_tokens", "Prompt tokens of the measured prompt (random words; a warm-up and a "
                + "short prompt of a quarter of it go first, and the rate is the slope between the two sizes). Near "
                + "the shorter of your typical prompts: a rate measured on shorter prompts than the traffic's errs "
                + "fast, which never refuses a request that could be served.")
                .intIn(PrefillCalibrationConfig.DEFAULTS.promptTokens(), PrefillCalibrationConfig.MIN_PROMPT_TOKENS,
                        1_000_000);
        Duration timeout = n.child("timeout", "How long one worker's calibration may take before it is given up "
                + "(the worker then keeps today's behaviour: its rate learnt from client traffic), and how long "
                + "/readiness waits for the calibrations of the workers present at start.")
                .durationAtLeast(PrefillCalibrationConfig.DEFAULTS.timeout(), Duration.ofMillis(100));
        return new PrefillCalibrationConfig(mode, tokens, timeout);
    }

    private static List<String> priorities(ConfigNode n) {
        List<String> out = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (ConfigNode item : n.items(1, true)) {
            String name = item.describe("A class name.").requiredText();
            if (name == null) {
                continue;
            }
            if (!seen.add(name)) {
                item.reject(name, "distinct class names");
                continue;
            }
            out.add(name);
        }
        if (n.isMissing()) {
            return n.stringsDefault(DEFAULT_PRIORITIES);
        }
        n.stringsDefault(DEFAULT_PRIORITIES);
        if (out.isEmpty()) {
            if (!n.reading().hasProblemAt(n.path())) {
                n.reject("[]", "at least one priority class, highest first");
            }
            return DEFAULT_PRIORITIES;
        }
        return out;
    }

    private static Map<String, ApiKey> apiKeys(ConfigNode n, List<String> priorities) {
        Map<String, ApiKey> out = new LinkedHashMap<>();
        Set<String> digests = new HashSet<>();
        for (Map.Entry<String, ConfigNode> e : n.entries("One client API key, by a name for logs, metrics and "
                + "/admin/state (never the key itself).")) {
            String name = e.getKey();
            ConfigNode entry = e.getValue().allowOnly("sha256", "tenant", "priority");
            ConfigNode digestNode = entry.child("sha256", "SHA-256 of the key, 64 hex digits (printf %s \"$KEY\" | "
                    + "sha256sum, or sluice-gateway hash-key); the key itself is never configured.")
                    .rule("64 hex digits");
            String digest = digestNode.requiredText();
            if (digest != null) {
                digest = digest.trim().toLowerCase(java.util.Locale.ROOT);
                if (!digest.matches("[0-9a-f]{64}")) {
                    // never echo what may be a cleartext key into a log or an error
                    digestNode.reject("(" + digest.length() + " characters, not shown)", "the key's SHA-256 as 64 "
                            + "hex digits, not the key: printf %s \"$KEY\" | sha256sum");
                    digest = null;
                } else if (!digests.add(digest)) {
                    digestNode.reject("(the digest of another key)", "one entry per key");
                    digest = null;
                }
            }
            String priority = entry.child("priority", "The class the key grants; absent: the request's "
                    + "X-Sluice-Priority or admission.default_priority.").rule("one of admission.priorities").text(null);
            if (priority != null && !priorities.contains(priority)) {
                entry.child("priority").reject(priority, "one of " + priorities);
                priority = null;
            }
            String tenant = entry.child("tenant", "Tenant name in metrics, logs and /admin/state; per-tenant limits "
                    + "apply to it.").defaultIs("the key's name").text(name);
            if (digest != null) {
                out.put(name, new ApiKey(name, digest, tenant, priority));
            }
        }
        return out;
    }

    /**
     * Whether a key is required; with no usable key, a problem is recorded (here, or at the key that
     * failed its checks), so the file is refused, and false goes on to the builder only so that the
     * reading can go on and report the rest.
     */
    private static boolean requireApiKey(ConfigNode n, Map<String, ApiKey> keys) {
        ConfigNode req = n.child("require_api_key", "true: a request without a valid key is refused (401 "
                + "invalid_api_key). false: a request without one is anonymous; a key that is present but unknown is "
                + "refused whenever keys are configured.");
        boolean required = req.bool(false);
        if (required && keys.isEmpty()) {
            if (!n.reading().hasProblemAt(n.path() + ".api_keys")) {
                req.reject("true", "admission.api_keys with at least one key (else no request could pass)");
            }
            return false;
        }
        return required;
    }

    private static TenantLimits tenantLimits(ConfigNode n) {
        n.allowOnly("max_queue_share", "max_pending_share", "tokens_per_minute", "per_tenant");
        TenantLimit d = tenantLimit(n, TenantLimits.DEFAULTS.defaults());
        Map<String, TenantLimit> per = new LinkedHashMap<>();
        for (Map.Entry<String, ConfigNode> e : n.child("per_tenant", "Overrides by tenant name (any of the three "
                + "keys above).").entries("One tenant's limits.")) {
            per.put(e.getKey(), tenantLimit(e.getValue().allowOnly("max_queue_share", "max_pending_share",
                    "tokens_per_minute"), d));
        }
        return new TenantLimits(d, per);
    }

    private static TenantLimit tenantLimit(ConfigNode n, TenantLimit d) {
        return new TenantLimit(
                n.child("max_queue_share", "Share of admission.max_queued_requests a tenant keeps when the queue is "
                        + "full and another tenant under its share arrives: past it, the tenant's newest waiting "
                        + "request gives way (429 tenant_share). 1 = no share kept for others.")
                        .doubleIn(d.maxQueueShare(), 0.01, 1.0, "a share in [0.01, 1]"),
                n.child("max_pending_share", "The same for admission.max_pending_tokens.")
                        .doubleIn(d.maxPendingShare(), 0.01, 1.0, "a share in [0.01, 1]"),
                n.child("tokens_per_minute", "Prompt + completion tokens a tenant may use per minute (a token bucket "
                        + "of that size); past it, 429 tenant_rate_limited with the time to refill. 0 = no limit. With "
                        + "coordination: the whole fleet's, each replica's bucket its leased share.")
                        .longIn(d.tokensPerMinute(), 0, Long.MAX_VALUE / 4));
    }

    private static TokenizerConfig tokenizer(ConfigNode n) {
        n.allowOnly("path", "initial_bytes_per_token", "chat_tokens_per_message", "threads");
        return TokenizerConfig.builder()
                .tokenizerJson(n.child("path", "A HuggingFace tokenizer.json for exact counting; absent: tokens "
                        + "are estimated from bytes with a learned ratio.").optionalText().map(Path::of))
                .initialBytesPerToken(n.child("initial_bytes_per_token", "The estimator's starting ratio; it follows "
                        + "usage.prompt_tokens.").doubleAtLeast(4.0, 0.5))
                .chatTokensPerMessage(n.child("chat_tokens_per_message", "Chat template overhead per message.")
                        .intIn(4, 0, 1000))
                .threads(n.child("threads",
                        "Tokenizer pool for exact counting (never the event loops).").intIn(2, 1, 64))
                .build();
    }
}
