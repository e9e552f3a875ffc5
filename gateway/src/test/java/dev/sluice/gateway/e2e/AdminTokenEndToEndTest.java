package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.cli.StatusCommand;
import dev.sluice.gateway.coordination.RedisServerAccess;
import dev.sluice.gateway.testing.GatewayProcess;
import dev.sluice.gateway.testing.PdTestbed;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * An admin listener that others can reach (0.0.0.0) is a gateway process that refuses to start without
 * an admin token, and with one ({@code admin.token_file}) answers {@code POST /admin/reload} only to it.
 * The secrets it holds (the admin token, the Redis password) appear in none of what it shows: its log,
 * {@code /admin/state}, {@code status}.
 */
class AdminTokenEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ADMIN_TOKEN = "adm-5d1e0c-token";
    private static final String REDIS_PASSWORD = "rds-93b7aa-password";
    // the workers are loopback ports where nothing listens: the listeners are what is tested
    private static final String BASE = """
            listen: { host: 127.0.0.1, port: 0 }
            workers:
              prefill: [ { url: "http://127.0.0.1:1", bootstrap_port: 8998 } ]
              decode: [ { url: "http://127.0.0.1:2" } ]
            """;

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void offLoopbackWithoutATokenTheGatewayRefusesToStart() throws Exception {
        Path config = Files.writeString(dir.resolve("gateway.yaml"), BASE + "admin: { host: 0.0.0.0, port: 0 }\n");
        // blank is no token (and keeps one the test's own environment might hold out of the child's)
        try (GatewayProcess gateway = GatewayProcess.start(config, Map.of("SLUICE_ADMIN_TOKEN", ""))) {
            assertThat(gateway.process.waitFor(30, TimeUnit.SECONDS)).as("exits; log:\n%s", gateway.log()).isTrue();
            assertThat(gateway.process.exitValue()).isNotZero();
            assertThat(gateway.log()).contains("admin.host: 0.0.0.0 (expected: a loopback address")
                    .contains("SLUICE_ADMIN_TOKEN").contains("admin.token_file")
                    .doesNotContain("gateway listening").doesNotContain("admin listening");
        }
    }

    @Test
    void withATokenFileItStartsAndReloadAnswersOnlyTheToken() throws Exception {
        try (RedisServerAccess redis = RedisServerAccess.start(dir.resolve("redis"),
                List.of("--requirepass", REDIS_PASSWORD))) {
            Path token = Files.writeString(dir.resolve("admin-token"), ADMIN_TOKEN + "\n");
            Path config = Files.writeString(dir.resolve("gateway.yaml"), BASE
                    + "admin: { host: 0.0.0.0, port: 0, token_file: \"" + token + "\" }\n"
                    + "coordination:\n  redis: { url: \"" + redis.url() + "\", password_env: SLUICE_REDIS_PASSWORD }\n"
                    + "  replica_id: gw-a\n");
            try (GatewayProcess gateway = GatewayProcess.start(config, Map.of("SLUICE_ADMIN_TOKEN", "",
                    "SLUICE_REDIS_PASSWORD", REDIS_PASSWORD))) {
                int admin = gateway.adminPort();
                assertThat(reload(admin, null).statusCode()).isEqualTo(401);
                assertThat(reload(admin, "Bearer wrong-" + ADMIN_TOKEN).statusCode()).isEqualTo(401);
                HttpResponse<String> denied = reload(admin, "Bearer " + ADMIN_TOKEN.substring(1));
                assertThat(denied.statusCode()).isEqualTo(401);
                assertThat(denied.body()).contains("SLUICE_ADMIN_TOKEN or admin.token_file").doesNotContain(ADMIN_TOKEN);
                HttpResponse<String> done = reload(admin, "Bearer " + ADMIN_TOKEN);
                assertThat(done.statusCode()).as(done.body()).isEqualTo(200);
                assertThat(JSON.readTree(done.body()).path("result").asText()).isNotEqualTo("invalid");

                // the password was used (the replica holds a lease), and is shown nowhere
                assertThat(PdTestbed.eventually(Duration.ofSeconds(20),
                        () -> state(admin).path("coordination").path("mode").asText().equals("leased")))
                        .as("leased; log:\n%s", gateway.log()).isTrue();
                String state = get(admin, "/admin/state");
                String metrics = get(admin, "/metrics");
                java.io.StringWriter status = new java.io.StringWriter();
                int code = new CommandLine(new StatusCommand()).setOut(new java.io.PrintWriter(status))
                        .execute("--admin", "http://127.0.0.1:" + admin, "--once");
                assertThat(code).isZero();
                assertThat(status.toString()).contains("gw-a");
                String page = get(admin, "/") + get(admin, "/status.js"); // the status page: no token needed, none shown
                assertThat(page).contains("/admin/state");
                for (String shown : List.of(state, metrics, page, status.toString(), gateway.log())) {
                    assertThat(shown).doesNotContain(REDIS_PASSWORD).doesNotContain(ADMIN_TOKEN);
                }
            }
        }
    }

    private HttpResponse<String> reload(int admin, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/admin/reload"))
                .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.noBody());
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private String get(int admin, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + path))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    private JsonNode state(int admin) {
        try {
            return JSON.readTree(get(admin, "/admin/state"));
        } catch (Exception e) {
            return JSON.createObjectNode();
        }
    }
}
