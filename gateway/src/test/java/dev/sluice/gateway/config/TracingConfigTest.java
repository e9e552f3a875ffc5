package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The tracing: section: off when absent, the OTEL_* variables filling what it leaves unset, its errors. */
class TracingConfigTest {
    private static final String WORKERS = """
            workers:
              prefill: [ { url: "http://10.0.0.1:30000" } ]
              decode: [ { url: "http://10.0.0.2:30001" } ]
            """;

    private static GatewayConfig parse(String yaml, Map<String, String> env) {
        return ConfigLoader.parse(WORKERS + yaml, "t.yaml", ConfigOverrides.of(env, List.of()));
    }

    @Test
    void absentIsOffEvenWithOtelVariables() {
        assertThat(parse("", Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")).tracing()).isEmpty();
    }

    @Test
    void theFileWinsAndTheOtelVariablesFillTheRest() {
        TracingConfig t = parse("tracing: { otlp: { protocol: http/protobuf }, service_name: gw }\n", Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
                "OTEL_TRACES_SAMPLER_ARG", "0.25", "OTEL_SERVICE_NAME", "ignored",
                "OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret,x-team=a", "OTEL_EXPORTER_OTLP_TIMEOUT", "2500"))
                .tracing().orElseThrow();
        assertThat(t.protocol()).isEqualTo(TracingConfig.Protocol.HTTP_PROTOBUF);
        assertThat(t.exportUrl()).isEqualTo("http://collector:4318/v1/traces");
        assertThat(t.sampleRatio()).isEqualTo(0.25);
        assertThat(t.serviceName()).isEqualTo("gw");
        assertThat(t.headers().get("api-key").reveal()).isEqualTo("s=cret");
        assertThat(t.timeout()).isEqualTo(Duration.ofMillis(2500));
        assertThat(t.honorClientSampling()).isFalse();
    }

    @Test
    void headersComeFromTheVariableHeadersEnvNames() {
        TracingConfig t = parse("tracing: { otlp: { endpoint: \"http://c:4317\", headers_env: MY_OTLP } }\n",
                Map.of("MY_OTLP", "authorization=Bearer x")).tracing().orElseThrow();
        assertThat(t.headers()).containsOnlyKeys("authorization");
        assertThat(t.headers().toString()).doesNotContain("Bearer");
        assertThat(t.exportUrl()).isEqualTo("http://c:4317");
    }

    @Test
    void credentialsInTheUrlAnUnsetHeadersVariableAndABadRatioAreRefused() {
        assertThatThrownBy(() -> parse("tracing: { otlp: { endpoint: \"http://u:secret@c:4317\" } }\n", Map.of()))
                .hasMessageContaining("tracing.otlp.endpoint").hasMessageNotContaining("secret");
        assertThatThrownBy(() -> parse("tracing: { otlp: { headers_env: NOPE } }\n", Map.of()))
                .hasMessageContaining("tracing.otlp.headers_env").hasMessageContaining("unset");
        assertThatThrownBy(() -> parse("tracing: { sample_ratio: 1.5 }\n", Map.of()))
                .hasMessageContaining("tracing.sample_ratio");
    }

    @Test
    void anOtelVariableThatCannotBeUsedIsRefusedNotDropped() {
        assertThatThrownBy(() -> parse("tracing: { otlp: { endpoint: \"http://c:4317\" } }\n",
                Map.of("OTEL_TRACES_SAMPLER_ARG", "lots")))
                .hasMessageContaining("tracing.sample_ratio").hasMessageContaining("OTEL_TRACES_SAMPLER_ARG=lots");
        assertThatThrownBy(() -> parse("tracing: { otlp: { endpoint: \"http://c:4317\" } }\n",
                Map.of("OTEL_TRACES_SAMPLER_ARG", "2")))
                .hasMessageContaining("between 0 and 1");
        assertThatThrownBy(() -> parse("tracing: { otlp: { endpoint: \"http://c:4317\" } }\n",
                Map.of("OTEL_EXPORTER_OTLP_TIMEOUT", "5s")))
                .hasMessageContaining("tracing.otlp.timeout").hasMessageContaining("=5s");
    }
}
