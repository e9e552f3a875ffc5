package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.gateway.config.HealthConfig.Passive;
import dev.sluice.gateway.config.HealthConfig.Watchdog;
import dev.sluice.gateway.config.RoutingConfig.CacheAware;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

/**
 * The builders are the last check of a configuration built in code: each rejected value names its
 * YAML key, the value and the expectation, in Armeria's form; and a loaded configuration survives
 * {@code toBuilder().build()} unchanged (the builders accept everything the readers accept).
 */
class ConfigBuildersTest {
    private static final String MINIMAL = """
            workers:
              prefill: [ { url: "http://127.0.0.1:30000" } ]
              decode: [ { url: "http://127.0.0.1:30001" } ]
            """;
    private static final GatewayConfig LOADED = ConfigLoader.parse(MINIMAL, "test");

    private static void rejects(ThrowingCallable call, String message) {
        assertThatThrownBy(call).isInstanceOf(IllegalArgumentException.class).hasMessage(message);
    }

    @Test
    void admissionNamesEachRejectedKey() {
        AdmissionConfig a = LOADED.admission();
        rejects(() -> a.toBuilder().maxQueuedRequests(-1), "admission.max_queued_requests: -1 (expected: >= 0)");
        rejects(() -> a.toBuilder().maxPendingTokens(0), "admission.max_pending_tokens: 0 (expected: >= 1)");
        rejects(() -> a.toBuilder().queueTimeout(Duration.ZERO), "admission.queue_timeout: 0s (expected: >= 1ms)");
        rejects(() -> a.toBuilder().maxRequestTokens(0), "admission.max_request_tokens: 0 (expected: >= 1)");
        rejects(() -> a.toBuilder().prefillMaxInflightRequests(0),
                "admission.prefill.max_inflight_requests: 0 (expected: >= 1)");
        rejects(() -> a.toBuilder().prefillMaxInflightTokens(0), "admission.prefill.max_inflight_tokens: 0 (expected: >= 1)");
        rejects(() -> a.toBuilder().decodeMaxInflightStreams(0), "admission.decode.max_inflight_streams: 0 (expected: >= 1)");
        rejects(() -> a.toBuilder().initialPrefillTokensPerSecond(0.5),
                "admission.initial_prefill_tokens_per_second: 0.5 (expected: >= 1)");
        rejects(() -> a.toBuilder().retryAfterMin(Duration.ofMillis(500)),
                "admission.retry_after.min: 500ms (expected: >= 1s)");
        rejects(() -> a.toBuilder().drainGrace(Duration.ofSeconds(-1)), "admission.drain_grace: -1s (expected: >= 0s)");
        rejects(() -> a.toBuilder().priorities(List.of()),
                "admission.priorities: [] (expected: at least one priority class, highest first)");
        rejects(() -> a.toBuilder().priorities(List.of("a", "a")), "admission.priorities: [a, a] (expected: distinct class names)");
        rejects(() -> a.toBuilder().tokenizer(a.tokenizer().toBuilder().threads(0).build()),
                "admission.tokenizer.threads: 0 (expected: >= 1)");
    }

    @Test
    void admissionChecksWhatInvolvesTwoKeysAtBuild() {
        AdmissionConfig a = LOADED.admission();
        rejects(() -> a.toBuilder().maxPendingTokens(100).maxRequestTokens(101).build(),
                "admission.max_request_tokens: 101 (expected: <= admission.max_pending_tokens (100))");
        rejects(() -> a.toBuilder().retryAfterMin(Duration.ofSeconds(5)).retryAfterMax(Duration.ofSeconds(2)).build(),
                "admission.retry_after.max: 2s (expected: >= admission.retry_after.min (5s))");
        rejects(() -> a.toBuilder().priorities(List.of("gold", "silver")).build(),
                "admission.default_priority: normal (expected: one of [gold, silver])");
        rejects(() -> a.toBuilder().apiKeys(Map.of("ci", new AdmissionConfig.ApiKey("ci", "0".repeat(64), "t", "vip")))
                .build(), "admission.api_keys.ci.priority: vip (expected: one of [high, normal, low])");
        rejects(() -> a.toBuilder().requireApiKey(true).build(), "admission.require_api_key: true "
                + "(expected: admission.api_keys with at least one key (else no request could pass))");
        // a new class list with a default from it is consistent
        assertThat(a.toBuilder().priorities(List.of("gold", "silver")).defaultPriority("silver").build().priorityIndex("silver"))
                .isEqualTo(1);
    }

    @Test
    void aBuilderWithAValueNotSetSaysWhichOne() {
        assertThatThrownBy(() -> TimeoutsConfig.builder().connect(Duration.ofSeconds(1)).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("timeouts.first_token: not set (expected: a value before build())");
        assertThatThrownBy(() -> LOADED.admission().toBuilder().queueTimeout(null))
                .isInstanceOf(NullPointerException.class).hasMessage("admission.queue_timeout");
    }

    @Test
    void healthAndItsPartsNameTheirKeys() {
        HealthConfig h = LOADED.health();
        rejects(() -> h.toBuilder().interval(Duration.ofMillis(10)), "health.interval: 10ms (expected: >= 50ms)");
        rejects(() -> h.toBuilder().unhealthyThreshold(0), "health.unhealthy_threshold: 0 (expected: >= 1)");
        rejects(() -> h.toBuilder().generateInterval(Duration.ofMillis(-1)), "health.generate_interval: -1ms (expected: >= 0s)");
        rejects(() -> h.toBuilder().decodeMaxKvUsage(1.5), "health.decode_max_kv_usage: 1.5 (expected: in [0.01, 1])");
        Passive p = h.passive();
        rejects(() -> p.toBuilder().failureRatio(0), "health.passive.failure_ratio: 0 (expected: in [0.01, 1])");
        rejects(() -> p.toBuilder().maxEjectedPercent(101), "health.passive.max_ejected_percent: 101 (expected: in [0, 100])");
        rejects(() -> p.toBuilder().baseEjection(Duration.ofMinutes(10)).build(),
                "health.passive.max_ejection: 5m (expected: >= health.passive.base_ejection (10m))");
        Watchdog w = h.watchdog();
        rejects(() -> w.toBuilder().prefillFactor(0.9), "health.watchdog.prefill_factor: 0.9 (expected: >= 1)");
        rejects(() -> w.toBuilder().firstTokenAfterPrefill(Duration.ofMillis(5)),
                "health.watchdog.first_token_after_prefill: 5ms (expected: >= 10ms)");
    }

    @Test
    void timeoutsRetriesAndHttpNameTheirKeys() {
        rejects(() -> LOADED.timeouts().toBuilder().idleStream(Duration.ZERO), "timeouts.idle_stream: 0s (expected: >= 1ms)");
        RetryConfig r = LOADED.retries();
        rejects(() -> r.toBuilder().maxRetries(11), "retries.max_retries: 11 (expected: in [0, 10])");
        rejects(() -> r.toBuilder().jitter(-0.1), "retries.jitter: -0.1 (expected: in [0, 1])");
        rejects(() -> r.toBuilder().backoffBase(Duration.ofSeconds(2)).build(),
                "retries.backoff_max: 1s (expected: >= retries.backoff_base (2s))");
        rejects(() -> LOADED.http().toBuilder().maxRequestBodyBytes(10), "http.max_request_body: 10 (expected: >= 1024)");
        rejects(() -> ClientLimits.DEFAULTS.toBuilder().maxHeaders(2), "http.max_headers: 2 (expected: >= 8)");
        rejects(() -> JsonLimits.DEFAULTS.toBuilder().maxDepth(3), "http.json.max_depth: 3 (expected: >= 4)");
    }

    @Test
    void routingNamesTheRoleOfItsCacheAwareSettings() {
        CacheAware c = LOADED.routing().decode().cacheAware();
        rejects(() -> c.toBuilder("routing.decode.cache_aware").matchThreshold(1.5),
                "routing.decode.cache_aware.match_threshold: 1.5 (expected: in [0, 1])");
        rejects(() -> c.toBuilder("routing.decode.cache_aware").shareThreshold(0.5),
                "routing.decode.cache_aware.balance_share_threshold: 0.5 (expected: 0 or >= 1)");
        rejects(() -> c.toBuilder("routing.prefill.cache_aware").maxTreeSize(1L << 31),
                "routing.prefill.cache_aware.max_tree_size: 2147483648 (expected: in [1, 2^31-1])");
        rejects(() -> LOADED.routing().toBuilder().directDecodeMaxTokens(-5),
                "routing.direct_decode_max_tokens: -5 (expected: >= 0)");
    }

    @Test
    void theWholeConfigChecksWhatDependsOnTheMode() {
        rejects(() -> LOADED.toBuilder().routing(LOADED.routing().toBuilder().directDecodeMaxTokens(64).build()).build(),
                "routing.direct_decode_max_tokens: 64 (expected: 0 unless disaggregation: vllm)");
        rejects(() -> LOADED.toBuilder().disaggregation(DisaggregationMode.NONE).build(),
                "workers: prefill or decode workers (expected: only workers.unified in disaggregation: none)");
        GatewayConfig.WorkersConfig unified = new GatewayConfig.WorkersConfig(List.of(), List.of(),
                List.of(GatewayConfig.WorkerEndpoint.of("http://10.0.0.1:8000", null, Optional.empty())));
        rejects(() -> LOADED.toBuilder().workers(unified).build(),
                "workers.unified: 1 workers (expected: empty unless disaggregation: none)");
        assertThat(LOADED.toBuilder().disaggregation(DisaggregationMode.NONE).workers(unified).build().workers())
                .isEqualTo(unified);
    }

    @Test
    void aWorkerEndpointTakesItsHostAndPortFromItsUrl() {
        assertThat(GatewayConfig.WorkerEndpoint.of("https://gpu-3.internal", 8998, Optional.empty()))
                .isEqualTo(new GatewayConfig.WorkerEndpoint("https://gpu-3.internal", "gpu-3.internal", 443, 8998));
        assertThat(GatewayConfig.WorkerEndpoint.of("http://10.0.0.2:30001", null, Optional.empty()).port()).isEqualTo(30001);
        rejects(() -> GatewayConfig.WorkerEndpoint.of("ftp://10.0.0.2", null, Optional.empty()),
                "workers[].url: ftp://10.0.0.2 (expected: an http:// or https:// URL with a host)");
    }

    @Test
    void everyLoadedConfigurationRebuildsToItself() {
        GatewayConfig full = ConfigLoader.parse(MINIMAL + """
                admission:
                  priorities: [gold, silver]
                  default_priority: gold
                  api_keys: { ci: { sha256: "%s", tenant: ci, priority: silver } }
                  require_api_key: true
                  tenant_limits: { per_tenant: { ci: { tokens_per_minute: 1000 } } }
                health: { generate_interval: 0s, passive: { max_ejected_percent: 0 } }
                retries: { max_retries: 0, backoff_base: 0s, backoff_max: 0s, jitter: 0 }
                """.formatted("a".repeat(64)), "test");
        assertThat(full.toBuilder().build()).isEqualTo(full);
        assertThat(full.admission().toBuilder().build()).isEqualTo(full.admission());
        assertThat(full.health().toBuilder().build()).isEqualTo(full.health());
        assertThat(full.health().passive().toBuilder().build()).isEqualTo(full.health().passive());
        assertThat(full.health().watchdog().toBuilder().build()).isEqualTo(full.health().watchdog());
        assertThat(full.retries().toBuilder().build()).isEqualTo(full.retries());
        assertThat(full.timeouts().toBuilder().build()).isEqualTo(full.timeouts());
        assertThat(full.http().toBuilder().build()).isEqualTo(full.http());
        assertThat(full.routing().toBuilder().build()).isEqualTo(full.routing());
        assertThat(full.routing().prefill().cacheAware().toBuilder("routing.prefill.cache_aware").build())
                .isEqualTo(full.routing().prefill().cacheAware());
    }
}
