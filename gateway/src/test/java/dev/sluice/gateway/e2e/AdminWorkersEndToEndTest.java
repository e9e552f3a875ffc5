package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.server.ConfigReload;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimWorker;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker registration API over real HTTP on the admin listener, in front of simulated workers:
 * a drain under load fails nothing and sends the drained worker nothing new; a delete stops the
 * streams on the worker (both halves aborted); an add puts a worker in rotation once its identity
 * and health checks pass, survives a reload, and shows its source; bad calls get clear errors; all
 * behind the admin token.
 */
class AdminWorkersEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN = "adm-workers-token";
    private PdTestbed bed;
    private ConfigReload reload;

    @AfterEach
    void close() throws Exception {
        if (reload != null) {
            reload.close();
        }
        if (bed != null) {
            bed.healAndClose();
        }
    }

    private void start(Path dir) throws Exception {
        Path token = Files.writeString(dir.resolve("admin-token"), TOKEN + "\n");
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(20)),
                "{connect: 1s, first_token: 30s, idle_stream: 10s}",
                "admin: {port: 0, token_file: \"" + token + "\"}\n");
    }

    private HttpResponse<String> admin(String method, String path, String body, boolean withToken) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + bed.gateway.adminPort() + path))
                .timeout(Duration.ofSeconds(10))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (withToken) {
            b.header("Authorization", "Bearer " + TOKEN);
        }
        return bed.http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String stream(int tokens) {
        return "{\"text\":\"hello\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":" + tokens + "}}";
    }

    private static int generations(SimWorker d) {
        return (int) d.journal().stream().filter(r -> r.path().equals("/generate")).count();
    }

    private static String id(SimWorker w) {
        URI u = URI.create(w.url());
        return u.getHost() + ":" + u.getPort();
    }

    private JsonNode stateOf(String id) throws Exception {
        JsonNode state = JSON.readTree(admin("GET", "/admin/state", null, false).body());
        for (JsonNode w : state.path("workers")) {
            if (w.path("worker").asText().equals(id)) {
                return w;
            }
        }
        return null;
    }

    @Test
    void aDrainUnderLoadFailsNothingSendsTheWorkerNothingNewAndRemovesItAtItsLastStreamEnd(@TempDir Path dir)
            throws Exception {
        start(dir);
        DecodeServer second = bed.cluster.decodes().get(1);
        List<CompletableFuture<HttpResponse<String>>> running = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            running.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"), stream(60)),
                    HttpResponse.BodyHandlers.ofString()));
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> generations(second) >= 3)).isTrue();
        assertThat(stateOf(id(second)).path("source").asText()).isEqualTo("file");

        assertThat(admin("POST", "/admin/workers/" + id(second) + "/drain", null, false).statusCode())
                .as("no token: refused").isEqualTo(401);
        HttpResponse<String> drained = admin("POST", "/admin/workers/" + id(second) + "/drain", null, true);
        assertThat(drained.statusCode()).as(drained.body()).isEqualTo(200);
        assertThat(JSON.readTree(drained.body()).path("id").asText()).isEqualTo(id(second));
        int atDrain = generations(second);
        for (int i = 0; i < 6; i++) {
            running.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"), stream(5)),
                    HttpResponse.BodyHandlers.ofString()));
        }
        for (CompletableFuture<HttpResponse<String>> f : running) {
            HttpResponse<String> r = f.get();
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("[DONE]").doesNotContain("\"error\"");
        }
        assertThat(generations(second)).as("nothing new after the drain call").isEqualTo(atDrain);
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.workers().decode().size() == 1
                && bed.gateway.drainingWorkers() == 0)).as("removed once its last stream ended").isTrue();
        assertThat(stateOf(id(second))).isNull();
        // a file worker drained stays out while the file still lists it: a reload does not bring it back
        Path file = Files.writeString(dir.resolve("gateway.yaml"), bed.yaml);
        reload = bed.gateway.reloader(file);
        Files.writeString(file, bed.yaml + "# read again\n");
        assertThat(reload.reload("test").result()).isIn("applied", "unchanged");
        assertThat(bed.gateway.workers().decode()).hasSize(1);
    }

    @Test
    void aDeleteStopsTheStreamsOnTheWorkerOnBothHalvesAndRemovesItNow(@TempDir Path dir) throws Exception {
        start(dir);
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/generate", stream(100_000));
            client.readUntil("data:");
            String rid = client.header("X-Request-Id");
            Worker on = bed.gateway.workers().decode().stream().filter(w -> w.inflight() == 1).findFirst().orElseThrow();
            SimWorker sim = bed.cluster.decodes().stream().filter(d -> id(d).equals(on.name())).findFirst()
                    .orElseThrow();

            HttpResponse<String> deleted = admin("DELETE", "/admin/workers/" + on.name(), null, true);

            assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(200);
            assertThat(client.readUntil("worker_removed")).contains("the worker serving this request was removed");
            // the prefill half had ended (its KV handed over) before the stream began: only the decode holds it
            assertThat(eventually(Duration.ofSeconds(3), () -> AbortBothHalvesEndToEndTest.abortOf(sim, rid)
                    .isPresent())).as("the decode got /abort_request").isTrue();
            assertThat(sim.awaitIdle(Duration.ofSeconds(5))).as("the decode stopped generating").isTrue();
            assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.workers().decode().size() == 1
                    && bed.gateway.drainingWorkers() == 0)).isTrue();
        }
        // the other decode serves on
        assertThat(bed.post("/generate", stream(3)).statusCode()).isEqualTo(200);
        assertThat(bed.metric("sluice_aborts_total{cause=\"worker_removed\"}")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void anAddedWorkerJoinsAfterItsChecksSurvivesAReloadAndBadCallsGetClearErrors(@TempDir Path dir)
            throws Exception {
        start(dir);
        DecodeServer second = bed.cluster.decodes().get(1);
        assertThat(admin("DELETE", "/admin/workers/" + id(second), null, true).statusCode()).isEqualTo(200);
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.workers().decode().size() == 1)).isTrue();
        // a deleted file worker is held out until it leaves the file: the admin API cannot re-add it behind
        // the file's back, so the file loses it first
        Path file = Files.writeString(dir.resolve("gateway.yaml"), bed.yaml);
        reload = bed.gateway.reloader(file);
        Files.writeString(file, bed.yaml.replace("    - url: " + second.url() + "\n", ""));
        assertThat(reload.reload("test").result()).isEqualTo("applied");

        assertThat(admin("POST", "/admin/workers", "{\"role\":\"decode\",\"url\":\"" + second.url() + "\"}", false)
                .statusCode()).isEqualTo(401);
        HttpResponse<String> added = admin("POST", "/admin/workers", "{\"pool\":\"default\",\"role\":\"decode\","
                + "\"url\":\"" + second.url() + "\"}", true);
        assertThat(added.statusCode()).as(added.body()).isEqualTo(201);
        assertThat(JSON.readTree(added.body()).path("id").asText()).isEqualTo(id(second));
        assertThat(stateOf(id(second)).path("source").asText()).isEqualTo("admin");
        int before = generations(second);
        assertThat(eventually(Duration.ofSeconds(15), () -> {
            try {
                bed.post("/generate", stream(2));
            } catch (Exception e) {
                return false;
            }
            return generations(second) > before;
        })).as("traffic once its identity and health checks passed").isTrue();
        Worker w = bed.gateway.workers().decode().stream().filter(x -> x.name().equals(id(second))).findFirst()
                .orElseThrow();
        assertThat(w.identityPending()).isFalse();

        // a reload keeps it
        assertThat(reload.reload("test").result()).isIn("applied", "unchanged");
        assertThat(bed.gateway.workers().decode()).extracting(Worker::name).contains(id(second));
        assertThat(stateOf(id(second)).path("source").asText()).isEqualTo("admin");

        // bad calls
        assertThat(admin("POST", "/admin/workers", "{\"role\":\"decode\",\"url\":\"" + second.url() + "\"}", true)
                .statusCode()).as("already in rotation").isEqualTo(409);
        HttpResponse<String> badRole = admin("POST", "/admin/workers", "{\"role\":\"embed\",\"url\":\"http://h:1\"}",
                true);
        assertThat(badRole.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(badRole.body()).path("error").path("message").asText()).contains("role: embed");
        assertThat(admin("POST", "/admin/workers", "{\"role\":\"decode\",\"url\":\"ftp://h:1\"}", true).statusCode())
                .isEqualTo(400);
        assertThat(admin("POST", "/admin/workers", "not json", true).statusCode()).isEqualTo(400);
        assertThat(admin("POST", "/admin/workers", "{\"pool\":\"other\",\"role\":\"decode\",\"url\":\"http://h:1\"}",
                true).statusCode()).isEqualTo(404);
        HttpResponse<String> unknown = admin("POST", "/admin/workers/10.9.9.9:1/drain", null, true);
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(unknown.body()).path("error").path("code").asText()).isEqualTo("worker_not_found");
        assertThat(admin("GET", "/admin/workers/" + id(second), null, true).statusCode()).isEqualTo(405);

        // drained, an admin-added worker is removed for good once idle
        assertThat(admin("POST", "/admin/workers/" + id(second) + "/drain", null, true).statusCode()).isEqualTo(200);
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.workers().decode().size() == 1)).isTrue();
        assertThat(reload.reload("test").result()).isIn("applied", "unchanged");
        assertThat(bed.gateway.workers().decode()).hasSize(1);
    }
}
