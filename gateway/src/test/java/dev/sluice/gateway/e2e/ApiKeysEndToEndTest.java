package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.ApiKeys;
import dev.sluice.gateway.testing.GatewayProcess;
import dev.sluice.gateway.testing.Wire;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * API keys on a gateway process, over raw sockets: keys configured as SHA-256 only; no key, an
 * unknown key, a malformed Authorization: 401 with a JSON body and WWW-Authenticate, no worker
 * contacted, and the same connection then serves a keyed request. The key decides the tenant (a
 * tenant header cannot spend another tenant's quota), a tenant's token rate answers 429 with an
 * honest Retry-After and recovers after it, and neither the keys, their digests, the admin token
 * nor a prompt appear in /metrics, /admin/state or the log.
 */
class ApiKeysEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String KEY_A = "sk-team-a-9f2c41d0e7";
    private static final String KEY_B = "sk-team-b-77aa10c3e5";
    private static final String WRONG = "sk-guess-00000000000";
    private static final String ADMIN_TOKEN = "admin-tok-5b1e";
    private static final String CANARY = "PROMPT-CANARY-31337";
    private final HttpClient http = HttpClient.newHttpClient();

    private static String body(int words) {
        return "{\"messages\":[{\"role\":\"user\",\"content\":\"" + CANARY + " " + "abc ".repeat(words)
                + "\"}],\"max_tokens\":2}";
    }

    @Test
    void keysTenantsAndRatesHoldOnARunningGateway(@TempDir Path dir) throws Exception {
        try (SimCluster sim = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(2)))) {
            Path config = dir.resolve("gateway.yaml");
            Files.writeString(config, "listen: {host: 127.0.0.1, port: 0}\n"
                    + "workers:\n  prefill:\n    - url: " + sim.prefills().get(0).url() + "\n      bootstrap_port: "
                    + sim.prefills().get(0).bootstrapPort() + "\n  decode:\n    - url: " + sim.decodes().get(0).url() + "\n"
                    + "health: {interval: 100ms}\nadmin: {port: 0}\n"
                    + "admission:\n  require_api_key: true\n  api_keys:\n"
                    + "    team-a-prod: { sha256: " + ApiKeys.hex(KEY_A) + ", tenant: team-a, priority: high }\n"
                    + "    team-b-prod: { sha256: " + ApiKeys.hex(KEY_B) + ", tenant: team-b }\n"
                    + "  tenant_limits:\n    per_tenant:\n      team-b: { tokens_per_minute: 600 }\n");
            try (GatewayProcess gateway = GatewayProcess.start(config, Map.of("SLUICE_ADMIN_TOKEN", ADMIN_TOKEN))) {
                int port = gateway.port();
                int admin = gateway.adminPort();
                awaitReady(port);

                // refused without a valid key, on one keep-alive connection that then serves a keyed request
                try (Wire wire = new Wire(port)) {
                    for (String auth : new String[]{null, "Bearer " + WRONG, "Basic dXNlcjpwYXNz", "Bearer ",
                            "Bearer " + KEY_A + "x"}) {
                        Wire.Response r = wire.exchange(post(body(5), auth, ""));
                        assertThat(r.status()).as("Authorization %s", auth).isEqualTo(401);
                        assertThat(r.headers().get("www-authenticate")).isEqualTo("Bearer");
                        JsonNode e = JSON.readTree(r.text()).get("error");
                        assertThat(e.get("code").asText()).isEqualTo("invalid_api_key");
                        assertThat(e.get("type").asText()).isEqualTo("invalid_request_error");
                        assertThat(r.text()).doesNotContain(WRONG);
                    }
                    Wire.Response models = wire.exchange(("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
                    assertThat(models.status()).as("info routes reach workers: keyed too").isEqualTo(401);
                    assertThat(sim.prefills().get(0).journal()).filteredOn(q -> !q.path().startsWith("/health")
                            && !q.path().equals("/get_load") && !q.path().equals("/v1/loads") && !q.path().equals("/metrics")
                            && !q.path().equals("/server_info")
                            // the gateway's own calibration of the prefill rate at start is no client's request
                            && !q.header("X-Request-Id").orElse("").startsWith("sluice-calib-")).isEmpty();
                    assertThat(wire.exchange(post(body(5), "Bearer " + KEY_A, "")).status()).isEqualTo(200);
                    assertThat(wire.exchange(("GET /health HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII))
                            .status()).as("probes need no key").isEqualTo(200);
                }

                // team-b: 600 tokens a minute. Its key decides the tenant even when a header claims team-a.
                int served = 0;
                Wire.Response limited = null;
                try (Wire wire = new Wire(port)) {
                    for (int i = 0; i < 10 && limited == null; i++) {
                        Wire.Response r = wire.exchange(post(body(150), "Bearer " + KEY_B, "X-Sluice-Tenant: team-a\r\n"));
                        if (r.status() == 429) {
                            limited = r;
                        } else {
                            assertThat(r.status()).isEqualTo(200);
                            served++;
                        }
                    }
                }
                assertThat(served).as("~150-token prompts against a 600-token bucket").isBetween(2, 5);
                assertThat(limited).isNotNull();
                assertThat(JSON.readTree(limited.text()).at("/error/code").asText()).isEqualTo("tenant_rate_limited");
                assertThat(limited.headers().get("x-sluice-reject-reason")).isEqualTo("tenant_rate_limited");
                long retryAfter = Long.parseLong(limited.headers().get("retry-after"));
                assertThat(retryAfter).isBetween(1L, 60L);
                // team-a (the claimed tenant) was never charged: it still gets through at once
                try (Wire wire = new Wire(port)) {
                    assertThat(wire.exchange(post(body(150), "Bearer " + KEY_A, "")).status()).isEqualTo(200);
                }
                // not a synchronisation: the client does what Retry-After tells it, and the test checks that
                // waiting that long is enough (the bucket refills with time, there is no event to wait for)
                Thread.sleep(retryAfter * 1000 + 200);
                try (Wire wire = new Wire(port)) {
                    assertThat(wire.exchange(post(body(5), "Bearer " + KEY_B, "")).status())
                            .as("after Retry-After the bucket has refilled enough").isEqualTo(200);
                }

                // nothing secret in what the gateway exposes or logs
                String metrics = get(admin, "/metrics");
                String state = get(admin, "/admin/state");
                String log = gateway.log();
                assertThat(metrics).containsPattern("sluice_rejections_total\\{reason=\"tenant_rate_limited\",?\\} 1\\.0");
                for (String text : new String[]{metrics, state, log}) {
                    assertThat(text).doesNotContain(KEY_A).doesNotContain(KEY_B).doesNotContain(WRONG)
                            .doesNotContain(ApiKeys.hex(KEY_A)).doesNotContain(ApiKeys.hex(KEY_B))
                            .doesNotContain(ADMIN_TOKEN).doesNotContain(CANARY);
                }
                assertThat(log).contains("tenant=team-b").contains("tenant=team-a");
                assertThat(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/admin/reload"))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString()).statusCode())
                        .as("mutating admin endpoints need the token").isEqualTo(401);
            }
        }
    }

    private void awaitReady(int port) throws Exception {
        long end = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (System.nanoTime() < end) {
            try {
                if (http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readiness")).build(),
                        HttpResponse.BodyHandlers.ofString()).statusCode() == 200) {
                    return;
                }
            } catch (IOException notYet) {
                // starting
            }
            Thread.sleep(50); // the pace of this poll with a deadline
        }
        throw new AssertionError("gateway never ready");
    }

    private String get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private static byte[] post(String body, String authorization, String extra) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        return ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + (authorization == null ? "" : "Authorization: " + authorization + "\r\n") + extra
                + "Content-Length: " + b.length + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8);
    }
}
