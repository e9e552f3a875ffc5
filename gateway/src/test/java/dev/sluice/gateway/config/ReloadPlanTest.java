package dev.sluice.gateway.config;

import static dev.sluice.gateway.config.ConfigSection.ADMISSION;
import static dev.sluice.gateway.config.ConfigSection.ADMISSION_TOKENIZER;
import static dev.sluice.gateway.config.ConfigSection.DISAGGREGATION;
import static dev.sluice.gateway.config.ConfigSection.WORKERS;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** What a reload puts in force, what it reports, and what it keeps for the next start. */
class ReloadPlanTest {
    private static final String SGLANG = """
            workers:
              prefill: [ { url: "http://10.0.0.1:30000", bootstrap_port: 8998 } ]
              decode: [ { url: "http://10.0.0.2:30001" } ]
            """;
    private static final GatewayConfig RUNNING = ConfigLoader.parse(SGLANG, "running.yaml");

    private static GatewayConfig file(String extra) {
        return ConfigLoader.parse(SGLANG + extra, "next.yaml");
    }

    /** One change per section, as a file would make it. */
    static Stream<Arguments> liveChanges() {
        return Stream.of(
                Arguments.of("admission: { max_queued_requests: 7 }", ADMISSION),
                Arguments.of("admission: { priorities: [gold, silver], default_priority: gold }", ADMISSION),
                Arguments.of("health: { passive: { window: 45s } }", ConfigSection.HEALTH),
                Arguments.of("timeouts: { connect: 750ms }", ConfigSection.TIMEOUTS),
                Arguments.of("retries: { max_retries: 0 }", ConfigSection.RETRIES),
                Arguments.of("logging: { requests: failures }", ConfigSection.LOGGING),
                Arguments.of("tracing: { otlp: { endpoint: \"http://127.0.0.1:4318\", protocol: http/protobuf } }",
                        ConfigSection.TRACING));
    }

    @ParameterizedTest
    @MethodSource("liveChanges")
    void aLiveChangeIsPutInForceAndListed(String yaml, ConfigSection section) {
        GatewayConfig next = file(yaml);
        ReloadPlan plan = ReloadPlan.of(RUNNING, next);

        assertThat(plan.applied()).containsExactly(section);
        assertThat(plan.appliedKeys()).containsExactly(section.key());
        assertThat(plan.restartRequired()).isEmpty();
        assertThat(plan.applies(section)).isTrue();
        assertThat(section.valueIn(plan.config())).isEqualTo(section.valueIn(next)).isNotEqualTo(section.valueIn(RUNNING));
        assertThat(plan.config()).isEqualTo(next);
    }

    static Stream<Arguments> restartChanges() {
        return Stream.of(
                Arguments.of("listen: { port: 9090 }", ConfigSection.LISTEN),
                Arguments.of("http: { max_request_body: 1MiB }", ConfigSection.HTTP),
                Arguments.of("upstream: { idle_timeout: 3s }", ConfigSection.UPSTREAM),
                Arguments.of("telemetry: { interval: 2s }", ConfigSection.TELEMETRY),
                Arguments.of("admin: { port: 9091 }", ConfigSection.ADMIN),
                Arguments.of("routing: { decode: { policy: round_robin } }", ConfigSection.ROUTING));
    }

    @ParameterizedTest
    @MethodSource("restartChanges")
    void aRestartSectionKeepsTheRunningValueAndIsListed(String yaml, ConfigSection section) {
        GatewayConfig next = file(yaml);
        ReloadPlan plan = ReloadPlan.of(RUNNING, next);

        assertThat(plan.restartRequired()).containsExactly(section);
        assertThat(plan.restartRequiredKeys()).containsExactly(section.key());
        assertThat(plan.applied()).isEmpty();
        assertThat(plan.config()).isEqualTo(RUNNING);
    }

    @Test
    void theAdmissionLimitsApplyWithTheRunningTokenizer() {
        GatewayConfig next = file("""
                admission:
                  max_pending_tokens: 65536
                  tokenizer: { threads: 4, chat_tokens_per_message: 6 }
                """);
        ReloadPlan plan = ReloadPlan.of(RUNNING, next);

        assertThat(plan.appliedKeys()).containsExactly("admission");
        assertThat(plan.restartRequiredKeys()).containsExactly("admission.tokenizer");
        assertThat(plan.config().admission().maxPendingTokens()).isEqualTo(65536);
        assertThat(plan.config().admission().tokenizer()).isEqualTo(RUNNING.admission().tokenizer());
        assertThat(plan.config().admission()).isEqualTo(next.admission().toBuilder()
                .tokenizer(RUNNING.admission().tokenizer()).build());
    }

    @Test
    void aTokenizerChangeAloneAppliesNothing() {
        ReloadPlan plan = ReloadPlan.of(RUNNING, file("admission: { tokenizer: { threads: 3 } }"));

        assertThat(plan.applied()).isEmpty();
        assertThat(plan.restartRequired()).containsExactly(ADMISSION_TOKENIZER);
        assertThat(plan.config()).isEqualTo(RUNNING);
    }

    @Test
    void workersApplyWithinTheMode() {
        GatewayConfig next = ConfigLoader.parse("""
                workers:
                  prefill: [ { url: "http://10.0.0.1:30000", bootstrap_port: 8998 }, { url: "http://10.0.0.3:30000" } ]
                  decode: [ { url: "http://10.0.0.2:30001" } ]
                """, "next.yaml");
        ReloadPlan plan = ReloadPlan.of(RUNNING, next);

        assertThat(plan.applied()).containsExactly(WORKERS);
        assertThat(plan.restartRequired()).isEmpty();
        assertThat(plan.config().workers().prefill()).hasSize(2);
    }

    @Test
    void workersOfAnotherModeWaitForTheRestartWithTheMode() {
        GatewayConfig next = ConfigLoader.parse("""
                disaggregation: none
                workers:
                  unified: [ { url: "http://10.0.0.9:8000" } ]
                timeouts: { request: 5m }
                """, "next.yaml");
        ReloadPlan plan = ReloadPlan.of(RUNNING, next);

        assertThat(plan.restartRequired()).containsExactly(DISAGGREGATION, WORKERS);
        assertThat(plan.appliedKeys()).containsExactly("timeouts");
        assertThat(plan.config().disaggregation()).isEqualTo(DisaggregationMode.SGLANG);
        assertThat(plan.config().workers()).isEqualTo(RUNNING.workers());
        assertThat(plan.config().timeouts().request()).isEqualTo(Duration.ofMinutes(5));
    }

    @Test
    void anUnchangedFileChangesNothing() {
        ReloadPlan plan = ReloadPlan.of(RUNNING, file(""));

        assertThat(plan.applied()).isEmpty();
        assertThat(plan.restartRequired()).isEmpty();
        assertThat(plan.config()).isEqualTo(RUNNING);
    }

    @Test
    void everySectionChangedAtOnceSplitsAsDeclared() {
        GatewayConfig next = EverySectionChanged.parse("{ direct_decode_max_tokens: 64 }", "next.yaml");
        ReloadPlan plan = ReloadPlan.of(RUNNING, next);

        List<ConfigSection> restart = Arrays.stream(ConfigSection.values())
                .filter(s -> s.effect() != ConfigSection.Effect.LIVE).toList(); // workers: another mode
        assertThat(plan.restartRequired()).containsExactlyElementsOf(restart);
        assertThat(plan.applied()).containsExactlyElementsOf(Arrays.stream(ConfigSection.values())
                .filter(s -> s.effect() == ConfigSection.Effect.LIVE).toList());
        for (ConfigSection s : ConfigSection.values()) {
            Object expected = s.valueIn(restart.contains(s) ? RUNNING : next);
            if (s == ADMISSION) {
                expected = next.admission().toBuilder().tokenizer(RUNNING.admission().tokenizer()).build();
            }
            assertThat(s.valueIn(plan.config())).as(s.key()).isEqualTo(expected);
        }
        assertThat(plan.config().routing().directDecodeMaxTokens()).isZero(); // with the running sglang mode
        assertThat(plan.config().listen().port()).isEqualTo(8080);
    }
}
