package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.coordination.RedisServerAccess;
import dev.sluice.gateway.server.ConfigReload;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.server.ReloadResult;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.TwoModelPools;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reload that adds and removes model pools, on a real gateway over simulated workers: two pools (big, the
 * default, and small) run; a third, {@code extra}, an SGLang PD pair of its own, comes with a reload and
 * serves its model; a reload without it stops its model at once (404 model_not_found) while its stream in
 * flight finishes, then nothing of it is left (no series with its pool label, nothing queued or in flight,
 * its thread gone). With coordination, its leases come and go with it. With a short drain grace, a stream that outlives it is stopped as the gateway's drain stops
 * one (an error event to the client, {@code /abort_request} to the half still working). The
 * default pool cannot be removed: that reload is refused whole.
 */
class ModelPoolsReloadEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private TwoModelPools pools;
    private SimCluster extra;
    private GatewayServer gw;
    private Path file;
    private ConfigReload reload;

    @TempDir
    Path dir;

    private String coordination = ""; // a coordination: section, or none

    private String top(String drainGrace) {
        return "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\nhealth: {interval: 100ms}\n"
                + "admission: {queue_timeout: 20s, drain_grace: " + drainGrace + "}\n" + coordination;
    }

    /** The two pools of the fixture, and the extra pool's PD pair (20 ms a token: a stream takes a while). */
    private void start(String drainGrace) throws Exception {
        pools = TwoModelPools.start();
        extra = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false).withModel("extra-model")
                .withDecodeStep(Duration.ofMillis(20)), SimMode.SGLANG);
        file = dir.resolve("gateway.yaml");
        Files.writeString(file, twoPools(drainGrace));
        gw = PdTestbed.startGateway(Files.readString(file));
        reload = gw.reloader(file);
    }

    private String twoPools(String drainGrace) {
        return pools.yaml(top(drainGrace), null, "{max_queued_requests: 4}");
    }

    private String withExtra(String drainGrace) {
        return twoPools(drainGrace) + "  - name: extra\n    models: [extra-model]\n    disaggregation: sglang\n"
                + "    workers:\n      prefill: [{url: " + extra.prefills().get(0).url() + ", bootstrap_port: "
                + extra.prefills().get(0).bootstrapPort() + "}]\n"
                + "      decode: [{url: " + extra.decodes().get(0).url() + "}]\n"
                + "    admission: {max_queued_requests: 3}\n"
                // its prefill named as a KV event publisher (none publishes there): the pool's own subscriber thread
                + "    routing: {prefill: {policy: cache_aware}, kv_events: {endpoints: {\""
                + extra.prefills().get(0).url() + "\": \"tcp://127.0.0.1:1\"}}}\n";
    }

    /** Threads of this JVM whose name starts with {@code prefix}. */
    private static long threads(String prefix) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith(prefix)).count();
    }

    private ReloadResult reloadWith(String yaml) throws Exception {
        Files.writeString(file, yaml);
        return reload.reload("test");
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : new AutoCloseable[]{gw, extra, pools}) {
            if (c != null) {
                c.close();
            }
        }
    }

    private CompletableFuture<HttpResponse<String>> chatAsync(String model, boolean stream, int maxTokens) {
        return http.sendAsync(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + gw.port()
                + "/v1/chat/completions"), "{\"model\":\"" + model + "\",\"stream\":" + stream + ",\"max_tokens\":"
                + maxTokens + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello pools\"}]}"),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> chat(String model) throws Exception {
        return chatAsync(model, false, 8).get(30, TimeUnit.SECONDS);
    }

    private String get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private static List<String> modelsSeen(SimWorker w) {
        List<String> out = new ArrayList<>();
        for (RecordedRequest r : w.journal()) {
            if (r.body() != null && r.body().has("messages")) {
                out.add(r.body().path("model").asText());
            }
        }
        return out;
    }

    private void addExtraAndServeIt(String drainGrace) throws Exception {
        assertThat(chat("extra-model").statusCode()).as("not a pool's model yet").isEqualTo(404);
        ReloadResult added = reloadWith(withExtra(drainGrace));
        assertThat(added.result()).as(String.valueOf(added.error())).isEqualTo("applied");
        assertThat(added.applied()).contains("pools");
        assertThat(gw.poolNames()).containsExactly("big", "small", "extra");
        assertThat(eventually(Duration.ofSeconds(15), () -> {
            try {
                return chat("extra-model").statusCode() == 200;
            } catch (Exception e) {
                return false;
            }
        })).as("the added pool serves its model once its workers passed their checks").isTrue();
        assertThat(modelsSeen(extra.prefillWorkers().get(0))).contains("extra-model");
        assertThat(modelsSeen(extra.decodeWorkers().get(0))).contains("extra-model");
    }

    @Test
    void aPoolAddedByReloadServesAndARemovedOneFinishesItsStreamThenLeavesNothing() throws Exception {
        start("20s");
        long kvThreads = threads("sluice-kv-events"); // none of this gateway's pools has KV events yet
        addExtraAndServeIt("20s");
        assertThat(threads("sluice-kv-events")).as("the added pool's KV event subscriber").isEqualTo(kvThreads + 1);
        List<String> models = new ArrayList<>();
        JSON.readTree(get(gw.port(), "/v1/models")).path("data").forEach(m -> models.add(m.path("id").asText()
                + "@" + m.path("pool").asText()));
        assertThat(models).contains("extra-model@extra");
        String metrics = get(gw.adminPort(), "/metrics");
        assertThat(metrics).containsPattern("sluice_admission_limit\\{limit=\"max_queued_requests\",pool=\"extra\",?\\} 3\\.0")
                .containsPattern("sluice_worker_up\\{pool=\"extra\",role=\"decode\",worker=\"[^\"]+\",?\\} 1\\.0")
                .contains("pool=\"small\"");
        List<String> statePools = new ArrayList<>();
        JSON.readTree(get(gw.adminPort(), "/admin/state")).path("pools").forEach(p -> statePools.add(p.path("name")
                .asText()));
        assertThat(statePools).containsExactly("big", "small", "extra");

        // a stream of 100 tokens at 20 ms (~2 s) on the extra pool, then a reload without the pool
        CompletableFuture<HttpResponse<String>> stream = chatAsync("extra-model", true, 100);
        assertThat(eventually(Duration.ofSeconds(10), () -> extra.decodes().get(0).stats().running() == 1)).isTrue();
        ReloadResult removed = reloadWith(twoPools("20s"));
        assertThat(removed.result()).as(String.valueOf(removed.error())).isEqualTo("applied");
        assertThat(gw.poolNames()).containsExactly("big", "small");
        HttpResponse<String> gone = chat("extra-model");
        assertThat(gone.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(gone.body()).at("/error/code").asText()).isEqualTo("model_not_found");
        assertThat(stream.isDone()).as("the stream was still running when its pool went").isFalse();
        assertThat(gw.retiringPools()).containsExactly("extra");

        HttpResponse<String> finished = stream.get(30, TimeUnit.SECONDS);
        assertThat(finished.statusCode()).isEqualTo(200);
        assertThat(finished.body()).contains("\"finish_reason\":\"length\"").contains("data: [DONE]");
        assertThat(extra.decodeWorkers().get(0).aborts()).as("finished, not stopped").isEmpty();
        assertThat(eventually(Duration.ofSeconds(10), () -> gw.retiringPools().isEmpty())).isTrue();
        assertThat(get(gw.adminPort(), "/metrics")).as("no series of the removed pool").doesNotContain("pool=\"extra\"")
                .contains("pool=\"small\"");
        assertIdle();
        assertThat(threads("sluice-pool-retire")).isZero();
        assertThat(eventually(Duration.ofSeconds(5), () -> threads("sluice-kv-events") == kvThreads))
                .as("the removed pool's KV event subscriber stopped").isTrue();

        // the other pools serve on; a pool added again under the same name serves again
        assertThat(chat("small-model").statusCode()).isEqualTo(200);
        assertThat(chat("big").statusCode()).isEqualTo(200);
        addExtraAndServeIt("20s");
    }

    @Test
    void aStreamThatOutlivesTheDrainGraceIsStoppedOnBothHalves() throws Exception {
        start("500ms");
        addExtraAndServeIt("500ms");
        CompletableFuture<HttpResponse<String>> endless = chatAsync("extra-model", true, 100_000);
        assertThat(eventually(Duration.ofSeconds(10), () -> extra.decodes().get(0).stats().running() == 1)).isTrue();
        long removedAt = System.nanoTime();
        assertThat(reloadWith(twoPools("500ms")).result()).isEqualTo("applied");

        HttpResponse<String> cut = endless.get(10, TimeUnit.SECONDS);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - removedAt);
        assertThat(tookMs).as("stopped after the grace, not before").isGreaterThanOrEqualTo(400);
        assertThat(cut.body()).as("the client is told, in the stream").contains("\"code\":\"draining\"")
                .contains("the pool extra was removed by a configuration reload before this request finished")
                .doesNotContain("\"finish_reason\":\"length\"");
        // the prefill half was over (the stream was decoding): the decode half is told to stop, as in a drain
        assertThat(eventually(Duration.ofSeconds(5), () -> !extra.decodeWorkers().get(0).aborts().isEmpty()))
                .as("the decode got /abort_request").isTrue();
        assertThat(eventually(Duration.ofSeconds(10), () -> gw.retiringPools().isEmpty())).isTrue();
        assertThat(get(gw.adminPort(), "/metrics")).doesNotContain("pool=\"extra\"");
        assertIdle();
        assertThat(extra.decodes().get(0).awaitIdle(Duration.ofSeconds(5))).isTrue();
        assertThat(extra.prefills().get(0).awaitIdle(Duration.ofSeconds(5))).isTrue();
    }

    /** With coordination, the added pool leases its own budgets in the fleet; once removed, it holds none. */
    @Test
    void anAddedPoolsLeasesComeWithItAndGoWithIt() throws Exception {
        try (RedisServerAccess redis = RedisServerAccess.start(dir)) {
            coordination = "coordination: {redis: {url: \"" + redis.url() + "\"}, replica_id: r1, lease_ttl: 3s, "
                    + "renew_interval: 200ms}\n";
            start("20s");
            String extraFleet = "{sluice:pool.extra}:fleet";
            assertThat(redis.cli("hkeys", extraFleet).trim()).isEmpty();
            addExtraAndServeIt("20s");
            assertThat(eventually(Duration.ofSeconds(10), () -> cli(redis, "hkeys", extraFleet).contains("r1")))
                    .as("the added pool's lease in its own fleet hash").isTrue();
            assertThat(gw.coordination().orElseThrow().serving()).isTrue();

            assertThat(reloadWith(twoPools("20s")).result()).isEqualTo("applied");
            assertThat(eventually(Duration.ofSeconds(10), () -> gw.retiringPools().isEmpty())).isTrue();
            assertThat(cli(redis, "hkeys", extraFleet)).as("left the removed pool's fleet").doesNotContain("r1");
            assertThat(cli(redis, "hkeys", "{sluice:pool.small}:fleet")).as("the kept pool's lease stays")
                    .contains("r1");
            assertThat(gw.coordination().orElseThrow().serving()).isTrue();
            gw.close(); // before redis stops: the kept pools leave the fleet too
            gw = null;
        }
    }

    /**
     * Clients keep asking for the extra pool's model while reloads add and remove the pool, again and again: every
     * answer is a 200, a 404 {@code model_not_found} or a 503 {@code draining}. A pool added by a reload serves
     * only once its workers had their first health verdicts (before that wait, its first requests got 503
     * {@code no_capacity}: this test failed 3 runs in 3 without it). Once the pool is gone nothing of it is left
     * (no series with its label, nothing queued or in flight). The instant between a request's model lookup and
     * its joining the pool's in-flight set (ModelPool.retire) is too short to be hit here: that guard is by
     * construction, not shown by this test.
     */
    @Test
    void requestsRacingTheRemovalOfTheirPoolAreAnsweredAndLeaveNothingBehind() throws Exception {
        start("300ms");
        List<Integer> statuses = java.util.Collections.synchronizedList(new ArrayList<>());
        List<String> odd = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicBoolean go = new java.util.concurrent.atomic.AtomicBoolean(true);
        java.util.concurrent.atomic.AtomicInteger ok = new java.util.concurrent.atomic.AtomicInteger();
        List<Thread> clients = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Thread t = new Thread(() -> {
                while (go.get()) {
                    try {
                        HttpResponse<String> r = chatAsync("extra-model", false, 1).get(30, TimeUnit.SECONDS);
                        statuses.add(r.statusCode());
                        if (r.statusCode() == 200) {
                            ok.incrementAndGet();
                        }
                        String code = r.statusCode() == 200 ? "" : JSON.readTree(r.body()).at("/error/code").asText();
                        if (!(r.statusCode() == 200 || code.equals("model_not_found")
                                || (r.statusCode() == 503 && code.equals("draining")))) {
                            odd.add(r.statusCode() + " " + r.body());
                        }
                    } catch (Exception e) {
                        odd.add(e.toString());
                    }
                }
            }, "pool-race-client-" + i);
            t.start();
            clients.add(t);
        }
        try {
            for (int cycle = 0; cycle < 5; cycle++) {
                assertThat(reloadWith(withExtra("300ms")).result()).isEqualTo("applied");
                int served = ok.get();
                assertThat(eventually(Duration.ofSeconds(15), () -> ok.get() > served))
                        .as("cycle %d: the added pool serves", cycle).isTrue();
                assertThat(reloadWith(twoPools("300ms")).result()).isEqualTo("applied");
                assertThat(eventually(Duration.ofSeconds(10), () -> gw.retiringPools().isEmpty())).isTrue();
            }
        } finally {
            go.set(false);
            for (Thread t : clients) {
                t.join(35_000);
            }
        }
        assertThat(odd).as("answers other than 200, 404 model_not_found, 503 draining").isEmpty();
        synchronized (statuses) {
            assertThat(statuses).contains(200, 404);
        }
        assertThat(get(gw.adminPort(), "/metrics")).as("no series of the removed pool").doesNotContain("pool=\"extra\"");
        assertIdle();
    }

    private static String cli(RedisServerAccess redis, String... args) {
        try {
            return redis.cli(args);
        } catch (Exception e) {
            return "";
        }
    }

    @Test
    void removingTheDefaultPoolIsRefusedWhole() throws Exception {
        start("20s");
        String withoutBig = twoPools("20s").replaceAll("(?s)  - name: big\n.*?(?=  - name: small\n)", "")
                .replace("admission: {max_queued_requests: 4}", "admission: {max_queued_requests: 9}");
        ReloadResult refused = reloadWith(withoutBig);
        assertThat(refused.result()).isEqualTo("invalid");
        assertThat(refused.error()).contains("the default pool big cannot be removed");
        assertThat(gw.poolNames()).containsExactly("big", "small");
        assertThat(gw.admission("small").orElseThrow().config().maxQueuedRequests()).as("nothing applied").isEqualTo(4);
        assertThat(chat("big-model").statusCode()).isEqualTo(200);
        JsonNode last = JSON.readTree(get(gw.adminPort(), "/admin/state")).at("/config/last_reload");
        assertThat(last.path("result").asText()).isEqualTo("invalid");
        assertThat(last.path("error").asText()).contains("the default pool big cannot be removed");
    }

    /** Nothing queued, pending or in flight anywhere in the gateway. */
    private void assertIdle() throws InterruptedException {
        for (String pool : gw.poolNames()) {
            AdmissionController a = gw.admission(pool).orElseThrow();
            assertThat(eventually(Duration.ofSeconds(10), () -> a.snapshot().idle()))
                    .as("pool %s's admission back to zero: %s", pool, a.snapshot()).isTrue();
        }
        assertThat(eventually(Duration.ofSeconds(10), () -> gw.liveRequests() == 0)).isTrue();
        assertThat(gw.liveRequests()).isZero();
    }
}
