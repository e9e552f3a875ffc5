package dev.sluice.gateway.state;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigOverrides;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StateDirectoryTest {
    private static final String HOME = "/home/op";

    private static java.util.Optional<Path> auto(Map<String, String> env) {
        return StateDirectory.stateFile("auto", env, HOME);
    }

    @Test
    void autoTakesTheFirstOfOursSystemdsXdgsAndTheHomeDirectory() {
        Map<String, String> all = Map.of("SLUICE_STATE_DIRECTORY", "/srv/sluice", "STATE_DIRECTORY",
                "/var/lib/sluice:/var/lib/other", "XDG_STATE_HOME", "/home/op/.state");
        assertThat(auto(all)).contains(Path.of("/srv/sluice/prefill-rates.json"));
        assertThat(auto(Map.of("STATE_DIRECTORY", "/var/lib/sluice:/var/lib/other", "XDG_STATE_HOME", "/x")))
                .contains(Path.of("/var/lib/sluice/prefill-rates.json"));
        assertThat(auto(Map.of("XDG_STATE_HOME", "/home/op/.state")))
                .contains(Path.of("/home/op/.state/sluice/prefill-rates.json"));
        assertThat(auto(Map.of("XDG_STATE_HOME", "relative/ignored")))
                .contains(Path.of("/home/op/.local/state/sluice/prefill-rates.json"));
        assertThat(auto(Map.of())).contains(Path.of("/home/op/.local/state/sluice/prefill-rates.json"));
        assertThat(StateDirectory.stateFile("auto", Map.of(), "")).isEmpty();
        assertThat(StateDirectory.stateFile(null, Map.of("STATE_DIRECTORY", "/var/lib/sluice"), HOME))
                .contains(Path.of("/var/lib/sluice/prefill-rates.json"));
    }

    @Test
    void noneTurnsItOffInTheSettingOrForAutoInTheEnvironment() {
        assertThat(auto(Map.of("SLUICE_STATE_DIRECTORY", "none", "STATE_DIRECTORY", "/var/lib/sluice"))).isEmpty();
        assertThat(StateDirectory.stateFile("none", Map.of("STATE_DIRECTORY", "/var/lib/sluice"), HOME)).isEmpty();
        assertThat(StateDirectory.stateFile(" none ", Map.of(), HOME)).isEmpty();
    }

    @Test
    void theConfigurationResolvesAutoFromTheEnvironmentItIsReadWith() {
        String yaml = "workers: {unified: [{url: http://127.0.0.1:1}]}\ndisaggregation: none\n";
        assertThat(stateFile(yaml, Map.of("STATE_DIRECTORY", "/var/lib/sluice")))
                .contains(Path.of("/var/lib/sluice/prefill-rates.json"));
        assertThat(stateFile(yaml, Map.of("SLUICE_STATE_DIRECTORY", "none", "STATE_DIRECTORY", "/var/lib/sluice")))
                .isEmpty();
        assertThat(stateFile(yaml + "admission: {prefill_rate: {state_file: none}}\n",
                Map.of("STATE_DIRECTORY", "/var/lib/sluice"))).isEmpty();
        assertThat(stateFile(yaml + "admission: {prefill_rate: {state_file: /srv/r.json}}\n", Map.of()))
                .contains(Path.of("/srv/r.json"));
    }

    private static java.util.Optional<Path> stateFile(String yaml, Map<String, String> env) {
        return ConfigLoader.parse(yaml, "test", ConfigOverrides.of(env, List.of())).admission().prefillRate()
                .stateFile();
    }

    @Test
    void aPathIsTakenAsWrittenWhateverTheEnvironment() {
        assertThat(StateDirectory.stateFile("run/rates.json", Map.of("SLUICE_STATE_DIRECTORY", "none"), HOME))
                .contains(Path.of("run/rates.json"));
    }
}
