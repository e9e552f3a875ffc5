package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sluice.gateway.config.GatewayConfig.AdminConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code admin:}: a listener off loopback needs an admin token, from {@code SLUICE_ADMIN_TOKEN} or
 * {@code admin.token_file}; the token is kept as a secret.
 */
class AdminListenerConfigTest {
    private static final String WORKERS = """
            workers:
              prefill: [ { url: "http://10.0.0.1:30000" } ]
              decode: [ { url: "http://10.0.0.2:30001" } ]
            """;
    private static final String REFUSED = " (expected: a loopback address (127.0.0.1, ::1, localhost), or an admin "
            + "token in SLUICE_ADMIN_TOKEN or admin.token_file: anyone who reaches this listener could POST "
            + "/admin/reload)";

    @TempDir
    Path dir;

    private static GatewayConfig parse(String yaml, Map<String, String> env) {
        return ConfigLoader.parse(WORKERS + yaml, "gw.yaml", ConfigOverrides.of(env, List.of()));
    }

    private static List<String> problems(String yaml, Map<String, String> env) {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> parse(yaml, env));
        assertThat(e).as("expected a ConfigException for:\n" + yaml).isNotNull();
        return e.problems().stream().map(ConfigProblem::located).toList();
    }

    @Test
    void aListenerOffLoopbackWithoutATokenIsRefusedNamingBothSources() {
        for (String host : List.of("0.0.0.0", "::", "10.1.2.3", "gateway.internal")) {
            assertThat(problems("admin: { host: \"" + host + "\" }\n", Map.of())).as(host)
                    .containsExactly("gw.yaml:4: admin.host: " + host + REFUSED);
        }
        // from the environment's override too, and a blank token is no token
        assertThat(problems("", Map.of("SLUICE_ADMIN_HOST", "0.0.0.0", "SLUICE_ADMIN_TOKEN", "  ")))
                .containsExactly("env SLUICE_ADMIN_HOST: admin.host: 0.0.0.0" + REFUSED);
        // the rest of the file is still read: every problem at once
        assertThat(problems("admin: { host: 0.0.0.0 }\nlisten: { port: 70000 }\n", Map.of())).hasSize(2);
    }

    @Test
    void loopbackOrADisabledListenerNeedsNoToken() {
        for (String host : List.of("127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost", "LOCALHOST")) {
            AdminConfig admin = parse("admin: { host: \"" + host + "\" }\n", Map.of()).admin();
            assertThat(admin.host()).isEqualTo(host);
            assertThat(admin.token()).isEmpty();
        }
        assertThat(parse("", Map.of()).admin().host()).isEqualTo("127.0.0.1");
        assertThat(parse("admin: { enabled: false, host: 0.0.0.0 }\n", Map.of()).admin().enabled()).isFalse();
    }

    @Test
    void theTokenFromTheEnvironmentOrFromItsFileTrimmedAndNeverPrinted() throws Exception {
        AdminConfig fromEnv = parse("admin: { host: 0.0.0.0 }\n", Map.of("SLUICE_ADMIN_TOKEN", " env-token-1 \n"))
                .admin();
        assertThat(fromEnv.token().orElseThrow().reveal()).isEqualTo("env-token-1");

        Path file = Files.writeString(dir.resolve("admin-token"), "file-token-2\n");
        LoadedConfig loaded = ConfigLoader.check(WORKERS + "admin: { host: 0.0.0.0, token_file: \"" + file + "\" }\n",
                "gw.yaml", ConfigOverrides.of(Map.of(), List.of()));
        AdminConfig fromFile = loaded.config().admin();
        assertThat(fromFile.host()).isEqualTo("0.0.0.0");
        assertThat(fromFile.token().orElseThrow().reveal()).isEqualTo("file-token-2");
        assertThat(fromFile.toString()).doesNotContain("file-token-2");
        assertThat(loaded.effectiveYaml()).contains("token_file: " + file).doesNotContain("file-token-2");
        // on loopback a token is taken too (POST /admin/reload then needs it)
        assertThat(parse("admin: { token_file: \"" + file + "\" }\n", Map.of()).admin().token()).isPresent();
    }

    @Test
    void aMissingEmptyOrOversizedTokenFileOrTwoSourcesAreProblemsOfTheKey() throws Exception {
        Path missing = dir.resolve("nope");
        assertThat(problems("admin: { host: 0.0.0.0, token_file: \"" + missing + "\" }\n", Map.of()))
                .containsExactly("gw.yaml:4: admin.token_file: " + missing + " (expected: a readable file)");
        Path empty = Files.writeString(dir.resolve("empty"), " \n\t\n");
        assertThat(problems("admin: { host: 0.0.0.0, token_file: \"" + empty + "\" }\n", Map.of()))
                .containsExactly("gw.yaml:4: admin.token_file: " + empty
                        + " (expected: a file holding the admin token (it is empty))");
        Path big = Files.write(dir.resolve("big"), new byte[5000]);
        assertThat(problems("admin: { token_file: \"" + big + "\" }\n", Map.of()))
                .containsExactly("gw.yaml:4: admin.token_file: " + big
                        + " (expected: a file holding the admin token, at most 4096 bytes)");
        Path file = Files.writeString(dir.resolve("token"), "file-token\n");
        List<String> both = problems("admin: { host: 0.0.0.0, token_file: \"" + file + "\" }\n",
                Map.of("SLUICE_ADMIN_TOKEN", "env-token"));
        assertThat(both).containsExactly("gw.yaml:4: admin.token_file: " + file
                + " (expected: one source of the admin token, but SLUICE_ADMIN_TOKEN is set too)");
        assertThat(String.join("\n", both)).doesNotContain("env-token").doesNotContain("file-token");
    }

    @Test
    void aConfigurationBuiltInCodeIsHeldToTheSameRule() {
        assertThat(catchThrowableOfType(IllegalArgumentException.class,
                () -> new AdminConfig(true, "0.0.0.0", 8081, 50)).getMessage())
                .isEqualTo("admin.host: 0.0.0.0" + REFUSED);
        assertThat(new AdminConfig(true, "0.0.0.0", 8081, 50, java.util.Optional.of(new Secret("t"))).token())
                .isPresent();
        assertThat(AdminConfig.loopback("127.1.2.3")).isTrue();
        assertThat(AdminConfig.loopback("::ffff:127.0.0.1")).as("v4-mapped: Netty reads it as 127.0.0.1").isTrue();
        assertThat(AdminConfig.loopback("localhost.example.com")).isFalse();
        assertThat(AdminConfig.loopback("")).isFalse();
    }
}
