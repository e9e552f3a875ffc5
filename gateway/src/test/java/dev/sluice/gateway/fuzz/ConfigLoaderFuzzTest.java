package dev.sluice.gateway.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigProblem;
import dev.sluice.gateway.config.GatewayConfig;

/**
 * The config loader with any text: a valid configuration, or a ConfigException whose every
 * problem names where and what; never another exception, never a hang (alias bombs, deep nesting).
 * The seeds are the shipped files; the fuzzer mutates them.
 */
class ConfigLoaderFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void anyYamlLoadsOrIsExplained(FuzzedDataProvider data) {
        String yaml = data.consumeRemainingAsString();
        try {
            GatewayConfig c = ConfigLoader.parse(yaml, "fuzz.yaml");
            assertThat(c.workers()).isNotNull();
        } catch (ConfigException e) {
            assertThat(e.getMessage()).isNotBlank();
            for (ConfigProblem p : e.problems()) {
                assertThat(p.located()).isNotBlank();
            }
        }
    }
}
