package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ConfigLoaderTest {
    private static final String MINIMAL = """
            workers:
              prefill:
                - url: http://127.0.0.1:30000
                  bootstrap_port: 8998
              decode:
                - url: http://127.0.0.1:30001/
            """;

    @Test
    void appliesDocumentedDefaults() {
        GatewayConfig c = ConfigLoader.parse(MINIMAL, "test");

        assertThat(c.listen().host()).isEqualTo("0.0.0.0");
        assertThat(c.listen().port()).isEqualTo(8080);
        assertThat(c.disaggregation()).isEqualTo(DisaggregationMode.SGLANG);
        assertThat(c.timeouts().connect()).isEqualTo(Duration.ofSeconds(2));
        assertThat(c.timeouts().firstToken()).isEqualTo(Duration.ofSeconds(120));
        assertThat(c.timeouts().idleStream()).isEqualTo(Duration.ofSeconds(60));
        assertThat(c.http().maxRequestBodyBytes()).isEqualTo(32L << 20);
        assertThat(c.workers().prefill().get(0).bootstrapPort()).isEqualTo(8998);
        assertThat(c.workers().decode().get(0).url()).isEqualTo("http://127.0.0.1:30001");
        assertThat(c.workers().decode().get(0).port()).isEqualTo(30001);
    }

    @Test
    void readsDurationsAndSizes() {
        GatewayConfig c = ConfigLoader.parse(MINIMAL + """
                timeouts: { connect: 500ms, first_token: 2m, idle_stream: 30s }
                http: { max_request_body: 1MiB }
                """, "test");

        assertThat(c.timeouts().connect()).isEqualTo(Duration.ofMillis(500));
        assertThat(c.timeouts().firstToken()).isEqualTo(Duration.ofMinutes(2));
        assertThat(c.http().maxRequestBodyBytes()).isEqualTo(1 << 20);
    }

    @Test
    void theShippedConfigFilesAreValid() throws java.io.IOException {
        Path root = Path.of("..").toAbsolutePath().normalize();
        assertThat(ConfigLoader.load(root.resolve("config/gateway.yaml")).workers().prefill()).isNotEmpty();
        assertThat(ConfigLoader.load(root.resolve("config/demo.yaml")).workers().decode()).isNotEmpty();
        for (Path f : ConfigSchemaTest.shippedYaml()) {
            assertThat(ConfigLoader.load(f)).as(f.toString()).isNotNull();
        }
    }

    @Test
    void errorsNameTheKeyAndWhatWasExpected() {
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL + "timeouts: { connect: soon }\n", "t"))
                .hasMessage("timeouts.connect: soon (expected: a duration such as 500ms, 30s, 2m)");
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL + "listen: { port: 70000 }\n", "t"))
                .hasMessage("listen.port: 70000 (expected: an integer in [0, 65535])");
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL + "timeout: { connect: 1s }\n", "t"))
                .hasMessageStartingWith("timeout: unknown key");
        assertThatThrownBy(() -> ConfigLoader.parse("workers: { prefill: [], decode: [] }", "t"))
                .hasMessageStartingWith("workers.prefill: empty");
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL.replace("http://127.0.0.1:30000", "ftp://x"), "t"))
                .hasMessageStartingWith("workers.prefill[0].url: ftp://x");
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL + "disaggregation: mooncake\n", "t"))
                .hasMessage("disaggregation: mooncake (expected: one of sglang, vllm, none)");
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL + "disaggregation: none\n", "t"))
                .hasMessageStartingWith("workers.prefill: unknown key (expected one of: admin_api_key_env, api_key_env, discovery, unified)");
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL + "health: { decode_max_kv_usage: 1.5 }\n", "t"))
                .hasMessage("health.decode_max_kv_usage: 1.5 (expected: a fraction in (0, 1])");
        assertThatThrownBy(() -> ConfigLoader.parse(MINIMAL + "retries: { max_retries: 11 }\n", "t"))
                .hasMessage("retries.max_retries: 11 (expected: an integer in [0, 10])");
        assertThatThrownBy(() -> ConfigLoader.parse("listen: [", "t")).hasMessageStartingWith("t: not valid YAML");
        assertThatThrownBy(() -> ConfigLoader.load(Path.of("/nonexistent/sluice.yaml")))
                .hasMessage("/nonexistent/sluice.yaml: no such file");
    }
}
