package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Validation reports every problem of a file at once, in file order, each naming the key, value and expectation. */
class ConfigValidationTest {
    private static final String WORKERS = """
            workers:
              prefill:
                - url: http://10.0.0.1:30000
                  bootstrap_port: 8998
              decode:
                - url: http://10.0.0.2:30001
            """;

    private static List<ConfigProblem> problems(String yaml) {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> ConfigLoader.parse(yaml, "gw.yaml"));
        assertThat(e).as("expected a ConfigException for:\n" + yaml).isNotNull();
        assertThat(e.getMessage()).isEqualTo(String.join("\n", e.problems().stream().map(ConfigProblem::text).toList()));
        return e.problems();
    }

    private static List<String> texts(String yaml) {
        return problems(yaml).stream().map(ConfigProblem::text).toList();
    }

    @Test
    void severalErrorsInOneFileAreAllReportedInFileOrderWithTheirLines() {
        List<ConfigProblem> p = problems("""
                admission:
                  max_queued_requests: -1
                listen:
                  port: 70000
                timeouts:
                  conect: 2s
                  first_token: soon
                workers:
                  prefill:
                    - url: http://10.0.0.1:30000
                      bootstrap_port: 0
                  decode:
                    - url: ftp://10.0.0.2
                health: { decode_max_kv_usage: 1.5, passive: { max_ejection: 1s } }
                """);

        assertThat(p).extracting(ConfigProblem::located).containsExactly(
                "gw.yaml:2: admission.max_queued_requests: -1 (expected: an integer in [0, 1000000])",
                "gw.yaml:4: listen.port: 70000 (expected: an integer in [0, 65535])",
                "gw.yaml:6: timeouts.conect: unknown key (expected one of: abort, connect, first_token, idle_stream, "
                        + "request)",
                "gw.yaml:7: timeouts.first_token: soon (expected: a duration such as 500ms, 30s, 2m)",
                "gw.yaml:11: workers.prefill[0].bootstrap_port: 0 (expected: an integer in [1, 65535])",
                "gw.yaml:13: workers.decode[0].url: ftp://10.0.0.2 (expected: an http:// or https:// URL with a host)",
                "gw.yaml:14: health.decode_max_kv_usage: 1.5 (expected: a fraction in (0, 1])",
                "gw.yaml:14: health.passive.max_ejection: 1s (expected: a duration >= health.passive.base_ejection (10s))");
    }

    @Test
    void unknownKeysAreNamedWithWhatIsAllowed() {
        assertThat(texts(WORKERS + "listen: { prot: 8080 }\nhelth: {}\nadmission: { prefill: { max_inflight: 3 } }\n"))
                .containsExactly(
                        "listen.prot: unknown key (expected one of: host, internal_endpoints, port, tls)",
                        "helth: unknown key (expected one of: admin, admission, coordination, default_pool, disaggregation, health, "
                                + "http, listen, logging, pools, retries, routing, telemetry, timeouts, tracing, upstream, "
                                + "vllm_kv_connector, workers)",
                        "admission.prefill.max_inflight: unknown key (expected one of: max_inflight_requests, "
                                + "max_inflight_time, max_inflight_tokens)");
        assertThat(texts(WORKERS.replace("bootstrap_port: 8998", "bootstrap: 8998")))
                .containsExactly("workers.prefill[0].bootstrap: unknown key (expected one of: bootstrap_port, url)");
    }

    @Test
    void badDurationsNameTheKeyAndTheForm() {
        assertThat(texts(WORKERS + """
                timeouts: { connect: 2 seconds, idle_stream: -1s, request: 0ms }
                retries: { backoff_base: 100ms, backoff_max: 50ms }
                health: { interval: 10ms, watchdog: { prefill_floor: [1s] } }
                """)).containsExactly(
                "timeouts.connect: 2 seconds (expected: a duration such as 500ms, 30s, 2m)",
                "timeouts.idle_stream: -1s (expected: a duration such as 500ms, 30s, 2m)",
                "timeouts.request: 0ms (expected: a duration >= 1ms)",
                "retries.backoff_max: 50ms (expected: a duration >= retries.backoff_base (100ms))",
                "health.interval: 10ms (expected: a duration >= 50ms)",
                "health.watchdog.prefill_floor: array (expected: a duration such as 500ms, 30s, 2m)");
    }

    @Test
    void badUrlsNameTheItemAndWhatAWorkerUrlIs() {
        assertThat(texts("""
                workers:
                  prefill:
                    - url: gopher://10.0.0.1:30000
                    - url: http://10.0.0.1:30000/v1
                    - url: 10.0.0.1:30000
                    - bootstrap_port: 8998
                  decode:
                    - url: http://exa mple:1
                    - url: http://10.0.0.2:30001?x=1
                    - url: http://sglang:s3cr3t-pw@10.0.0.2:30001
                """)).containsExactly(
                "workers.prefill[0].url: gopher://10.0.0.1:30000 (expected: an http:// or https:// URL with a host)",
                "workers.prefill[1].url: http://10.0.0.1:30000/v1 (expected: a URL without a path; routes are appended "
                        + "by the gateway)",
                "workers.prefill[2].url: 10.0.0.1:30000 (expected: an http:// or https:// URL)",
                "workers.prefill[3].url: missing (expected: a URL such as http://10.0.0.1:30000)",
                "workers.decode[0].url: http://exa mple:1 (expected: an http:// or https:// URL)",
                "workers.decode[1].url: http://10.0.0.2:30001?x=1 (expected: a URL without a path; routes are appended "
                        + "by the gateway)",
                "workers.decode[2].url: http://***@10.0.0.2:30001 (expected: a URL without user:password@ (the gateway "
                        + "never sends it; a worker's API key goes in workers.api_key_env))");
    }

    @Test
    void aKeyWrittenTwiceIsAnErrorNamingItAndBothLines() {
        List<ConfigProblem> p = problems("""
                listen:
                  port: 8080
                  port: 9090
                admission: { retry_after: { min: 1s, min: 2s } }
                """ + WORKERS + """
                workers:
                  decode: [ { url: "http://10.0.0.3:30001" } ]
                """);
        assertThat(p).extracting(ConfigProblem::located).containsExactly(
                "gw.yaml:3: listen.port: written twice, lines 2 and 3 (expected: each key once)",
                "gw.yaml:4: admission.retry_after.min: written twice, lines 4 and 4 (expected: each key once)",
                "gw.yaml:11: workers: written twice, lines 5 and 11 (expected: each key once)",
                // the second one stands, as YAML has it, and it lacks prefill
                "gw.yaml:11: workers.prefill: missing (expected: at least one prefill worker)");
    }

    @Test
    void aSectionOfTheWrongShapeIsOneProblemNotACascade() {
        assertThat(texts(WORKERS + "timeouts: 5s\nadmission: [1, 2]\n")).containsExactly(
                "timeouts: 5s (expected: a mapping)", "admission: array (expected: a mapping)");
        assertThat(texts("workers: { prefill: http://10.0.0.1:30000, decode: [] }")).containsExactly(
                "workers.prefill: http://10.0.0.1:30000 (expected: a list)",
                "workers.decode: empty (expected: at least one decode worker)");
    }

    @Test
    void rulesBetweenKeysAndWithinListsAreChecked() {
        assertThat(texts(WORKERS + """
                admission:
                  max_pending_tokens: 1000
                  max_request_tokens: 2000
                  priorities: [gold, silver, gold]
                  default_priority: bronze
                  api_keys:
                    key-a: { sha256: a4a6d307ad00fa67176e1099fdbc4f4a09bb527a7f24718a5030f2f173d11f7f, tenant: a, priority: platinum }
                routing: { direct_decode_max_tokens: 64 }
                """)).containsExactly(
                "admission.max_request_tokens: 2000 (expected: <= admission.max_pending_tokens (1000): a larger prompt "
                        + "could never be admitted)",
                "admission.priorities[2]: gold (expected: distinct class names)",
                "admission.default_priority: bronze (expected: one of [gold, silver])",
                "admission.api_keys.key-a.priority: platinum (expected: one of [gold, silver])",
                "routing.direct_decode_max_tokens: 64 (expected: 0 unless disaggregation: vllm (an SGLang decode server "
                        + "cannot prefill on its own; in none mode every request is direct))");
    }

    @Test
    void theWrongWorkerListsForTheModeAreNamed() {
        assertThat(texts(WORKERS + "disaggregation: none\n")).containsExactly(
                "workers.prefill: unknown key (expected one of: admin_api_key_env, api_key_env, discovery, unified)",
                "workers.decode: unknown key (expected one of: admin_api_key_env, api_key_env, discovery, unified)",
                "workers.unified: missing (expected: at least one worker)");
        assertThat(texts("listen: { port: 1 }\n")).containsExactly(
                "workers: missing (expected: workers.prefill and workers.decode lists)");
    }

    @Test
    void theEffectiveConfigurationHasEveryDefault() {
        LoadedConfig c = ConfigLoader.check(WORKERS + """
                timeouts: { connect: 500ms }
                admission: { api_keys: { team-a: { sha256: 0162d8e28f30de44540c5fa4a78d2953c042096a887a30b9d60f298fa9dc4a71, priority: high } } }
                """, "gw.yaml", ConfigOverrides.none());
        String yaml = c.effectiveYaml();

        assertThat(yaml).contains("connect: 500ms", "first_token: 2m", "max_request_body: 32MiB",
                "stale_after: 5s", "priorities:\n    - high\n    - normal\n    - low", "default_priority: normal",
                "team-a:\n      sha256: 0162d8e28f30", "tenant: team-a", "balance_abs_threshold: 32", "disaggregation: sglang");
        assertThat(yaml.indexOf("listen:")).isLessThan(yaml.indexOf("workers:"));
        assertThat(yaml.indexOf("workers:")).isLessThan(yaml.indexOf("timeouts:"));
        assertThat(ConfigLoader.parse(yaml, "effective")).isEqualTo(c.config());
    }
}
