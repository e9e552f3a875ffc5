package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.GatewayProcess;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Live reload as an operator uses it, on a gateway process: the file is edited (watched), SIGHUP
 * is sent (systemd's ExecReload), {@code POST /admin/reload} is called, all while traffic flows.
 * New limits are seen by new admissions, no request is lost, and an invalid file is refused with
 * the running configuration kept.
 */
class ConfigReloadEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BODY = "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":10}}";
    private final HttpClient http = HttpClient.newHttpClient();

    private static String yaml(SimCluster sim, int streams, int queue) {
        return "listen: {host: 127.0.0.1, port: 0}\n"
                + "workers:\n  prefill:\n    - url: " + sim.prefills().get(0).url() + "\n      bootstrap_port: "
                + sim.prefills().get(0).bootstrapPort() + "\n  decode:\n    - url: " + sim.decodes().get(0).url() + "\n"
                + "health: {interval: 100ms}\nadmin: {port: 0}\n"
                + "admission: {max_queued_requests: " + queue + ", drain_grace: 2s, decode: {max_inflight_streams: "
                + streams + "}}\n";
    }

    private CompletableFuture<HttpResponse<String>> post(int port) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/generate"))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(BODY)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private List<Integer> burst(int port, int n) throws Exception {
        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            calls.add(post(port));
        }
        List<Integer> statuses = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            statuses.add(c.get(30, TimeUnit.SECONDS).statusCode());
        }
        return statuses;
    }

    private JsonNode state(int admin) throws Exception {
        return JSON.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/admin/state"))
                .build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    private double metric(int admin, String sample) throws Exception {
        String text = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        for (String line : text.split("\n")) {
            if (line.replace(",}", "}").startsWith(sample + " ")) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return -1;
    }

    private boolean until(ThrowingCheck check) throws InterruptedException {
        return eventually(Duration.ofSeconds(10), () -> {
            try {
                return check.get();
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** The log without its request lines (the load's, hundreds of them), its last 8,000 characters. */
    private static String tail(String log) {
        String s = java.util.Arrays.stream(log.split("\n")).filter(l -> !l.contains(" request rid="))
                .collect(java.util.stream.Collectors.joining("\n"));
        return s.length() <= 8000 ? s : s.substring(s.length() - 8000);
    }

    private interface ThrowingCheck {
        boolean get() throws Exception;
    }

    @Test
    void everyReloadPathAppliesNewLimitsUnderLoadAndAnInvalidFileIsRefused(@TempDir Path dir) throws Exception {
        try (SimCluster sim = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(20)))) {
            Path config = dir.resolve("gateway.yaml");
            Files.writeString(config, yaml(sim, 1, 1));
            try (GatewayProcess gateway = GatewayProcess.start(config, java.util.Map.of("SLUICE_ADMIN_TOKEN", "s3cret"))) {
                int port = gateway.port();
                int admin = gateway.adminPort();
                assertThat(until(() -> http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                        + "/readiness")).build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200)).isTrue();
                assertThat(metric(admin, "sluice_config_reloads_total{result=\"applied\"}")).isZero();
                String firstHash = state(admin).path("config").path("hash").asText();
                assertThat(firstHash).hasSize(12);
                assertThat(metric(admin, "sluice_config_info{hash=\"" + firstHash + "\"}")).isEqualTo(1.0);

                // one stream at a time and one queued: a burst of 6 gets 429s
                assertThat(burst(port, 6)).contains(429).contains(200);

                // traffic that never exceeds any limit runs through every reload below: none may fail
                AtomicBoolean running = new AtomicBoolean(true);
                AtomicInteger served = new AtomicInteger();
                List<Integer> lost = java.util.Collections.synchronizedList(new ArrayList<>());
                Thread load = new Thread(() -> {
                    while (running.get()) {
                        try {
                            int s = post(port).get(30, TimeUnit.SECONDS).statusCode();
                            if (s == 200) {
                                served.incrementAndGet();
                            } else {
                                lost.add(s);
                            }
                        } catch (Exception e) {
                            lost.add(-1);
                        }
                    }
                });
                load.start();

                // 1. the file is edited: the watch reloads it
                Files.writeString(config, yaml(sim, 8, 8));
                assertThat(until(() -> state(admin).path("limits").path("max_queued_requests").asInt() == 8
                        && state(admin).path("config").has("last_reload"))).isTrue();
                JsonNode last = state(admin).path("config").path("last_reload");
                assertThat(last.path("trigger").asText()).isEqualTo("file_watch");
                assertThat(last.path("result").asText()).isEqualTo("applied");
                assertThat(last.path("applied").toString()).contains("admission");
                assertThat(state(admin).path("limits").path("decode_max_inflight_streams").asInt()).isEqualTo(8);
                String secondHash = state(admin).path("config").path("hash").asText();
                assertThat(secondHash).isNotEqualTo(firstHash);
                assertThat(metric(admin, "sluice_config_info{hash=\"" + secondHash + "\"}")).isEqualTo(1.0);
                assertThat(metric(admin, "sluice_config_info{hash=\"" + firstHash + "\"}")).isEqualTo(-1);
                // new admissions see the new limits: the same burst now goes through whole
                assertThat(burst(port, 6)).containsOnly(200);

                // the reload API wants the admin token when one is set
                assertThat(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/admin/reload"))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString())
                        .statusCode()).isEqualTo(401);
                assertThat(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/admin/reload"))
                        .header("Authorization", "Bearer wrong").POST(HttpRequest.BodyPublishers.noBody()).build(),
                        HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(401);

                // 2. an invalid file is refused by POST /admin/reload; the running limits stay
                Files.writeString(config, yaml(sim, 8, 8).replace("max_queued_requests: 8", "max_queued_requests: -3"));
                HttpResponse<String> refused = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin
                        + "/admin/reload")).header("Authorization", "Bearer s3cret").POST(HttpRequest.BodyPublishers.noBody()).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(refused.statusCode()).isEqualTo(422);
                assertThat(JSON.readTree(refused.body()).path("error").asText()).contains("admission.max_queued_requests");
                assertThat(state(admin).path("limits").path("max_queued_requests").asInt()).isEqualTo(8);
                assertThat(state(admin).path("config").path("hash").asText()).isEqualTo(secondHash);
                assertThat(metric(admin, "sluice_config_reloads_total{result=\"invalid\"}")).isPositive();
                assertThat(gateway.log()).contains("config reload trigger=admin_api result=invalid");

                // 3. a valid file again, applied by POST /admin/reload (or by the watch first: then the API finds it unchanged)
                Files.writeString(config, yaml(sim, 8, 3));
                HttpResponse<String> ok = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin
                        + "/admin/reload")).header("Authorization", "Bearer s3cret").POST(HttpRequest.BodyPublishers.noBody()).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(ok.statusCode()).isEqualTo(200);
                assertThat(JSON.readTree(ok.body()).path("result").asText()).isIn("applied", "unchanged");
                assertThat(until(() -> state(admin).path("limits").path("max_queued_requests").asInt() == 3)).isTrue();

                // 4. SIGHUP (systemd's ExecReload) reloads too; here with new priority classes
                Files.writeString(config, yaml(sim, 8, 4).replace("drain_grace: 2s", "drain_grace: 2s, priorities: [urgent, normal, low]"));
                gateway.signal("HUP");
                assertThat(until(() -> gateway.log().contains("config reload trigger=sighup")))
                        .as("a reload line for the SIGHUP; the gateway's log ends:\n%s", tail(gateway.log())).isTrue();
                assertThat(until(() -> state(admin).path("limits").path("max_queued_requests").asInt() == 4)).isTrue();
                assertThat(state(admin).path("queue").path("by_class").has("urgent")).isTrue();
                assertThat(metric(admin, "sluice_queue_depth{priority=\"urgent\"}")).isZero();
                assertThat(metric(admin, "sluice_queue_depth{priority=\"high\"}")).isEqualTo(-1); // gone with its class
                assertThat(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/generate"))
                        .header("Content-Type", "application/json").header("X-Sluice-Priority", "urgent")
                        .POST(HttpRequest.BodyPublishers.ofString(BODY)).build(), HttpResponse.BodyHandlers.ofString())
                        .statusCode()).isEqualTo(200);

                running.set(false);
                load.join(30_000);
                assertThat(lost).as("requests that failed during the reloads").isEmpty();
                assertThat(served.get()).isPositive();
                assertThat(metric(admin, "sluice_config_reloads_total{result=\"applied\"}")).isGreaterThanOrEqualTo(2);

                gateway.signal("TERM");
                assertThat(gateway.process.waitFor(20, TimeUnit.SECONDS)).isTrue();
                assertThat(gateway.process.exitValue()).isZero();
            }
        }
    }

    @Test
    void aSighupIgnoredByWhatStartedTheGatewayIsSaidInItsLogAndTheOtherReloadsStillWork(@TempDir Path dir)
            throws Exception {
        try (SimCluster sim = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false))) {
            Path config = dir.resolve("gateway.yaml");
            Files.writeString(config, yaml(sim, 8, 2));
            try (GatewayProcess ignored = GatewayProcess.start(config, java.util.Map.of("SLUICE_ADMIN_TOKEN", "s3cret"),
                    "--ignore-signal=HUP")) {
                int admin = ignored.adminPort();
                assertThat(until(() -> ignored.log().contains("SIGHUP is ignored by this process"))).isTrue();
                ignored.signal("HUP"); // ignored: neither a reload nor the JVM's default (exit)
                Files.writeString(config, yaml(sim, 8, 5));
                assertThat(until(() -> state(admin).path("limits").path("max_queued_requests").asInt() == 5))
                        .as("the file watch still reloads; log:\n%s", tail(ignored.log())).isTrue();
                assertThat(ignored.process.isAlive()).isTrue();
                assertThat(ignored.log()).doesNotContain("trigger=sighup");
            }
            try (GatewayProcess normal = GatewayProcess.start(config)) {
                normal.adminPort();
                assertThat(normal.log()).doesNotContain("SIGHUP is ignored");
            }
        }
    }
}
