package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What differs per host: SLUICE_* environment variables and --set, over the file; and the workers' API key. */
class ConfigOverridesTest {
    private static final String FILE = """
            listen: { host: 0.0.0.0, port: 8080 }
            workers:
              prefill:
                - url: http://10.0.0.1:30000
                  bootstrap_port: 8998
              decode:
                - url: http://10.0.0.2:30001
            admin: { port: 8081 }
            """;

    private static GatewayConfig load(String yaml, Map<String, String> env, String... sets) {
        return ConfigLoader.parse(yaml, "gw.yaml", ConfigOverrides.of(env, List.of(sets)));
    }

    private static List<String> problems(String yaml, Map<String, String> env, String... sets) {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> load(yaml, env, sets));
        assertThat(e).isNotNull();
        return e.problems().stream().map(ConfigProblem::located).toList();
    }

    @Test
    void environmentVariablesSetPortsAndWorkerLists() {
        GatewayConfig c = load(FILE, Map.of(
                "SLUICE_LISTEN_PORT", "9000",
                "SLUICE_ADMIN_PORT", "9001",
                "SLUICE_LISTEN_HOST", "::",
                "SLUICE_WORKERS_PREFILL", "http://10.1.0.1:30000#bootstrap_port=8999, http://10.1.0.2:30000",
                "SLUICE_WORKERS_DECODE", "http://10.1.0.3:30001/"));

        assertThat(c.listen().port()).isEqualTo(9000);
        assertThat(c.listen().host()).isEqualTo("::");
        assertThat(c.admin().port()).isEqualTo(9001);
        assertThat(c.workers().prefill()).containsExactly(
                new WorkerEndpoint("http://10.1.0.1:30000", "10.1.0.1", 30000, 8999),
                new WorkerEndpoint("http://10.1.0.2:30000", "10.1.0.2", 30000, null));
        assertThat(c.workers().decode()).containsExactly(new WorkerEndpoint("http://10.1.0.3:30001", "10.1.0.3", 30001, null));
    }

    @Test
    void setWinsOverTheEnvironmentWhichWinsOverTheFile() {
        Map<String, String> env = Map.of("SLUICE_LISTEN_PORT", "9000");
        assertThat(load(FILE, Map.of()).listen().port()).isEqualTo(8080);
        assertThat(load(FILE, env).listen().port()).isEqualTo(9000);
        assertThat(load(FILE, env, "listen.port=9100").listen().port()).isEqualTo(9100);
        assertThat(load(FILE, Map.of("SLUICE_LISTEN_PORT", "")).listen().port()).as("an empty variable is ignored")
                .isEqualTo(8080);
    }

    @Test
    void setTakesYamlValuesListItemsAndRemovals() {
        GatewayConfig c = load(FILE, Map.of(),
                "timeouts.first_token=30s",
                "workers.prefill[0].bootstrap_port=9999",
                "workers.prefill[1]={url: http://10.0.0.9:30000}",
                "workers.decode=[{url: http://10.0.0.7:30001}, {url: http://10.0.0.8:30001}]",
                "admission.priorities=[gold, silver]",
                "admin.port=null",
                "listen.host=");

        assertThat(c.timeouts().firstToken()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.workers().prefill()).extracting(WorkerEndpoint::url, WorkerEndpoint::bootstrapPort)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("http://10.0.0.1:30000", 9999),
                        org.assertj.core.groups.Tuple.tuple("http://10.0.0.9:30000", null));
        assertThat(c.workers().decode()).extracting(WorkerEndpoint::port).containsExactly(30001, 30001);
        assertThat(c.admission().priorities()).containsExactly("gold", "silver");
        assertThat(c.admission().defaultPriority()).isEqualTo("silver");
        assertThat(c.admin().port()).as("removed: the default").isEqualTo(8081);
        assertThat(c.listen().host()).isEqualTo("0.0.0.0");
    }

    @Test
    void aBadOverrideIsReportedUnderItsKeyWithWhereItCameFrom() {
        assertThat(problems(FILE + "timeouts: { connect: soon }\n",
                Map.of("SLUICE_ADMIN_PORT", "eighty", "SLUICE_WORKERS_PREFILL", "http://10.0.0.1:30000#8998"),
                "timeouts.conect=1s", "listen.port", "workers.decode[3].url=http://h:1")).containsExactly(
                "gw.yaml:9: timeouts.connect: soon (expected: a duration such as 500ms, 30s, 2m)",
                "env SLUICE_WORKERS_PREFILL: workers.prefill: http://10.0.0.1:30000#8998 (expected: URL or "
                        + "URL#bootstrap_port=PORT, comma-separated)",
                "--set: listen.port: not an override (expected: --set key.path=value, e.g. --set listen.port=9000)",
                "--set workers.decode[3].url: workers.decode[3].url: no item 3 (expected: an index of an existing item, "
                        + "or the next one)",
                "--set timeouts.conect: timeouts.conect: unknown key (expected one of: abort, connect, first_token, "
                        + "idle_stream, request)",
                "env SLUICE_ADMIN_PORT: admin.port: eighty (expected: an integer in [0, 65535])");
    }

    @Test
    void anEmptyFileCanBeFilledFromTheEnvironment() {
        GatewayConfig c = load("# everything per host\n", Map.of("SLUICE_WORKERS_UNIFIED", "http://10.0.0.5:30000"),
                "disaggregation=none");
        assertThat(c.workers().unified()).extracting(WorkerEndpoint::host).containsExactly("10.0.0.5");
    }

    @Test
    void theWorkersApiKeyComesFromTheNamedVariableAndIsNeverPrinted() {
        String yaml = FILE.replace("workers:\n", "workers:\n  api_key_env: SIM_WORKER_KEY\n");
        LoadedConfig loaded = ConfigLoader.check(yaml, "gw.yaml",
                ConfigOverrides.of(Map.of("SIM_WORKER_KEY", "sk-worker-0123456789"), List.of()));

        for (WorkerEndpoint e : loaded.config().workers().prefill()) {
            assertThat(e.authorization()).map(Secret::reveal).contains("Bearer sk-worker-0123456789");
        }
        assertThat(loaded.config().workers().decode().get(0).authorization()).map(Secret::reveal)
                .contains("Bearer sk-worker-0123456789");
        assertThat(loaded.config().toString()).doesNotContain("sk-worker").contains("***");
        assertThat(loaded.effectiveYaml()).doesNotContain("sk-worker").contains("api_key_env: SIM_WORKER_KEY");
        assertThat(load(FILE, Map.of("SIM_WORKER_KEY", "k")).workers().decode().get(0).authorization())
                .as("no api_key_env: no key sent").isEmpty();
    }

    @Test
    void anUnsetOrEmptyKeyVariableRefusesToStart() {
        String yaml = FILE.replace("workers:\n", "workers:\n  api_key_env: SIM_WORKER_KEY\n");
        assertThat(problems(yaml, Map.of())).containsExactly("gw.yaml:3: workers.api_key_env: SIM_WORKER_KEY (expected: "
                + "the name of a set, non-empty environment variable holding the workers' API key (SIM_WORKER_KEY is unset))");
        assertThat(problems(yaml, Map.of("SIM_WORKER_KEY", " "))).singleElement().asString()
                .endsWith("(SIM_WORKER_KEY is empty))");
        assertThat(problems(FILE.replace("workers:\n", "workers:\n  api_key_env: sglang-key\n"), Map.of()))
                .containsExactly("gw.yaml:3: workers.api_key_env: sglang-key (expected: the name of an environment "
                        + "variable (letters, digits, _))");
    }
}
