package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code coordination:}: absent means alone; present, the URL is required, the password comes from the environment. */
class CoordinationConfigTest {
    private static final String WORKERS = """
            workers:
              prefill:
                - url: http://10.0.0.1:30000
              decode:
                - url: http://10.0.0.2:30001
            """;

    private static GatewayConfig parse(String yaml, Map<String, String> env) {
        return ConfigLoader.parse(WORKERS + yaml, "gw.yaml", ConfigOverrides.of(env, List.of()));
    }

    private static List<String> problems(String yaml, Map<String, String> env) {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> parse(yaml, env));
        assertThat(e).as("expected a ConfigException for:\n" + yaml).isNotNull();
        return e.problems().stream().map(ConfigProblem::text).toList();
    }

    @Test
    void absentMeansThisReplicaIsAlone() {
        assertThat(parse("", Map.of()).coordination()).isEmpty();
    }

    @Test
    void defaultsAndThePasswordFromTheEnvironment() {
        CoordinationConfig c = parse("""
                coordination:
                  redis:
                    url: rediss://redis.internal:6380
                    password_env: SLUICE_REDIS_PASSWORD
                    cluster: true
                """, Map.of("SLUICE_REDIS_PASSWORD", "s3cret")).coordination().orElseThrow();
        assertThat(c.url()).isEqualTo("rediss://redis.internal:6380");
        assertThat(c.tls()).isTrue();
        assertThat(c.cluster()).isTrue();
        assertThat(c.password().orElseThrow().reveal()).isEqualTo("s3cret");
        assertThat(c.toString()).doesNotContain("s3cret");
        assertThat(c.replicaId()).isEmpty();
        assertThat(c.leaseTtl()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.renewInterval()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void badValuesAreEachReportedWithTheirKey() {
        assertThat(problems("""
                coordination:
                  redis:
                    password_env: NOT_SET_HERE
                  lease_ttl: 0s
                """, Map.of())).containsExactly(
                "coordination.redis.password_env: NOT_SET_HERE (expected: the name of a set, non-empty environment "
                        + "variable holding the Redis password (NOT_SET_HERE is unset))",
                "coordination.redis.url: missing (expected: a URL such as redis://10.0.0.5:6379)",
                "coordination.lease_ttl: 0s (expected: a duration >= 1s)");
        assertThat(problems("""
                coordination:
                  redis: { url: "http://10.0.0.5:6379" }
                """, Map.of())).containsExactly(
                "coordination.redis.url: http://10.0.0.5:6379 (expected: a redis:// or rediss:// URL with a host)");
        assertThat(problems("""
                coordination:
                  redis: { url: "redis://:pw@10.0.0.5:6379" }
                """, Map.of())).containsExactly("coordination.redis.url: (a URL with a password) (expected: no "
                + "password in the file: name an environment variable in coordination.redis.password_env)");
        assertThat(problems("""
                coordination:
                  redis: { url: "redis://10.0.0.5:6379" }
                  lease_ttl: 2s
                  renew_interval: 1500ms
                """, Map.of())).containsExactly(
                "coordination.renew_interval: 1500ms (expected: at most half of coordination.lease_ttl (2s))");
    }

    @Test
    void aCaFileOnlyWithRedissAndOnlyAReadableOne(@TempDir Path dir) throws Exception {
        Path ca = Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
        CoordinationConfig c = parse("""
                coordination:
                  redis: { url: "rediss://redis.internal:6380", ca_file: "%s" }
                """.formatted(ca), Map.of()).coordination().orElseThrow();
        assertThat(c.caFile()).contains(ca);
        assertThat(parse("""
                coordination:
                  redis: { url: "rediss://redis.internal:6380" }
                """, Map.of()).coordination().orElseThrow().caFile()).isEmpty();
        assertThat(problems("""
                coordination:
                  redis: { url: "redis://redis.internal:6379", ca_file: "%s" }
                """.formatted(ca), Map.of())).containsExactly("coordination.redis.ca_file: " + ca
                + " (expected: only with a rediss:// coordination.redis.url)");
        assertThat(problems("""
                coordination:
                  redis: { url: "rediss://redis.internal:6380", ca_file: "%s" }
                """.formatted(dir.resolve("missing.pem")), Map.of())).containsExactly("coordination.redis.ca_file: "
                + dir.resolve("missing.pem") + " (expected: a readable file)");
    }
}
