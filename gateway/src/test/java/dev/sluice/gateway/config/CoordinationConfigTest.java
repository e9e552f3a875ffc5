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

    /**
     * Any user part is refused, a lone one too: Lettuce takes {@code redis://secret@host} for the password. The
     * refusal names the URL without what was before the '@', however the URI parser reads it.
     */
    @Test
    void aUrlWithAnyUserPartIsRefusedWithoutEchoingIt() {
        String expected = " (expected: no credentials in the URL: redis[s]://host:port, the password from "
                + "coordination.redis.password_env, an ACL user in coordination.redis.username)";
        Map<String, String> refused = new java.util.LinkedHashMap<>();
        refused.put("redis://hunter2@10.0.0.5:6379", "redis://***@10.0.0.5:6379");
        refused.put("rediss://sluice:hunter2@redis.internal:6380/0", "rediss://***@redis.internal:6380/0");
        refused.put("redis://:hunter2@10.0.0.5:6379", "redis://***@10.0.0.5:6379");
        refused.put("redis://hunter2@[::1]:6379", "redis://***@[::1]:6379");
        refused.put("http://hunter2@10.0.0.5:6379", "http://***@10.0.0.5:6379"); // the scheme's refusal would echo it
        // '@', '/', '#' in the password: the URI parser finds no user part (or no host); still refused, nothing shown
        refused.put("redis://:hun@ter2@10.0.0.5:6379", "(a URL with credentials, not shown)");
        refused.put("redis://:hun/ter2@10.0.0.5:6379", "(a URL with credentials, not shown)");
        refused.put("redis://:hun#ter2@10.0.0.5:6379", "(a URL with credentials, not shown)");
        refused.put("redis://hun ter2@10.0.0.5:6379", "(a URL with credentials, not shown)");
        refused.forEach((url, shown) -> {
            List<String> problems = problems("""
                    coordination:
                      redis: { url: "%s", password_env: PW }
                    """.formatted(url), Map.of("PW", "x"));
            assertThat(problems).as(url).containsExactly("coordination.redis.url: " + shown + expected);
            assertThat(String.join("\n", problems)).as(url).doesNotContain("hunter2").doesNotContain("hun");
        });
        // a configuration built in code gets the same refusal, without the URL
        assertThat(catchThrowableOfType(IllegalArgumentException.class, () -> new CoordinationConfig(
                "redis://hunter2@10.0.0.5:6379", java.util.Optional.empty(), false, java.util.Optional.empty(), "a",
                Duration.ofSeconds(5), Duration.ofSeconds(1))).getMessage()).doesNotContain("hunter2")
                .startsWith("coordination.redis.url: (a URL with credentials, not shown) (expected: no credentials");
    }

    @Test
    void anAclUserHasItsOwnKeyAndNeedsThePassword() {
        CoordinationConfig c = parse("""
                coordination:
                  redis: { url: "redis://10.0.0.5:6379", username: sluice, password_env: PW }
                """, Map.of("PW", "user-pw")).coordination().orElseThrow();
        assertThat(c.username()).contains("sluice");
        assertThat(c.password().orElseThrow().reveal()).isEqualTo("user-pw");
        assertThat(parse("""
                coordination:
                  redis: { url: "redis://10.0.0.5:6379" }
                """, Map.of()).coordination().orElseThrow().username()).isEmpty();
        assertThat(problems("""
                coordination:
                  redis: { url: "redis://10.0.0.5:6379", username: sluice }
                """, Map.of())).containsExactly("coordination.redis.username: sluice (expected: with "
                + "coordination.redis.password_env (the user's password))");
        assertThat(problems("""
                coordination:
                  redis: { url: "redis://10.0.0.5:6379", username: "two words", password_env: PW }
                """, Map.of("PW", "x"))).containsExactly("coordination.redis.username: two words (expected: an ACL "
                + "user name without spaces)");
    }
}
