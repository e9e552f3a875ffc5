package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.GatewayMain;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The admin listener's state view, the status command, and worker telemetry re-exported as gauges. */
class AdminAndTelemetryEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static PdTestbed bed;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(SimConfig.defaults().withDefaultMaxTokens(4), "{connect: 2s}");
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    private JsonNode state(int adminPort) throws Exception {
        HttpResponse<String> res = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + adminPort + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).isEqualTo(200);
        return JSON.readTree(res.body());
    }

    @Test
    void adminStateShowsLimitsQueueWorkersTelemetryAndRecentErrors() throws Exception {
        assertThat(bed.post("/generate", "{\"text\":\"hello\"}").statusCode()).isEqualTo(200);
        assertThat(bed.post("/generate", "{\"nope\":1}").statusCode()).isEqualTo(400);
        int admin = bed.gateway.adminPort();
        assertThat(eventually(Duration.ofSeconds(5), () -> {
            try {
                return state(admin).at("/workers/0/telemetry/last_poll_ok").asBoolean();
            } catch (Exception e) {
                return false;
            }
        })).isTrue();

        JsonNode s = state(admin);
        assertThat(s.at("/limits/max_queued_requests").asInt()).isEqualTo(32);
        assertThat(s.at("/limits/max_pending_tokens").asLong()).isEqualTo(262144);
        assertThat(s.at("/queue/queued").asInt()).isZero();
        assertThat(s.at("/queue/by_class/normal/queued").asInt()).isZero();
        assertThat(s.get("workers")).hasSize(2);
        JsonNode prefill = s.get("workers").get(0);
        assertThat(prefill.get("role").asText()).isEqualTo("prefill");
        assertThat(prefill.get("usable").asBoolean()).isTrue();
        assertThat(prefill.at("/telemetry/queue_requests").isNumber()).as(prefill.toString()).isTrue();
        assertThat(prefill.at("/telemetry/max_total_tokens").asDouble()).isPositive();
        assertThat(s.get("recent_errors")).anySatisfy(e -> {
            assertThat(e.get("status").asInt()).isEqualTo(400);
            assertThat(e.get("detail").asText()).contains("missing_prompt");
        });
    }

    @Test
    void statusPrintsTheQueueBudgetAndOneRowPerWorker() {
        StringWriter out = new StringWriter();
        CommandLine cli = new CommandLine(new GatewayMain());
        cli.setOut(new PrintWriter(out));
        int code = cli.execute("status", "--once", "--admin", "http://127.0.0.1:" + bed.gateway.adminPort());

        assertThat(code).isZero();
        assertThat(out.toString()).contains("queue    [").contains("/ 32 requests").contains("/ 262144 prompt tokens")
                .contains(bed.prefill().host() + ":" + bed.prefill().port())
                .contains(bed.decode().host() + ":" + bed.decode().port());
    }

    @Test
    void workerTelemetryIsReexportedAndAnUnreadableWorkerIsUnknownNotIdle() throws Exception {
        int dead;
        try (ServerSocket s = new ServerSocket(0)) {
            dead = s.getLocalPort();
        }
        String yaml = "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\n"
                + "workers:\n  prefill:\n    - url: " + bed.prefill().url() + "\n      bootstrap_port: " + bed.prefill().bootstrapPort()
                + "\n  decode:\n    - url: " + bed.decode().url() + "\n    - url: http://127.0.0.1:" + dead + "\n"
                + "health: {interval: 200ms}\ntelemetry: {interval: 200ms}\n";
        try (GatewayServer gw = new GatewayServer(ConfigLoader.parse(yaml, "test")).start()) {
            String live = "{role=\"prefill\",worker=\"" + bed.prefill().host() + ":" + bed.prefill().port() + "\",}";
            String gone = "{role=\"decode\",worker=\"127.0.0.1:" + dead + "\",}";
            assertThat(eventually(Duration.ofSeconds(5), () -> metricsOf(gw).contains("sluice_worker_telemetry_up" + live + " 1.0")))
                    .isTrue();
            String m = metricsOf(gw);
            assertThat(m).contains("sluice_worker_max_total_tokens" + live + " 1048576.0");
            assertThat(m).contains("sluice_worker_queue_requests" + live + " 0.0");
            assertThat(m).contains("sluice_worker_telemetry_up" + gone + " 0.0");
            assertThat(m).contains("sluice_worker_queue_requests" + gone + " NaN");
            assertThat(m).contains("sluice_worker_running_requests" + gone + " NaN");
            assertThat(m).contains("sluice_worker_telemetry_age_seconds" + gone + " +Inf");
            assertThat(m).contains("sluice_worker_up" + gone + " 0.0");
        }
    }

    private String metricsOf(GatewayServer gw) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.adminPort() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            return "";
        }
    }
}
