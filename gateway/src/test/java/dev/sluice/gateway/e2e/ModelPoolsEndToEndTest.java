package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.server.GatewayServer;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Two model pools behind one real gateway, each over its own simulated workers: an SGLang PD pair
 * serving {@code big-model} (alias {@code big}) with a queue of one, and a unified server serving
 * {@code small-model}. A request's model picks its pool (seen at the workers, not read back from the
 * gateway), an unknown model is 404 model_not_found and reaches no worker, /v1/models lists both,
 * the big pool flooded far past its queue refuses its own excess while every request of the small
 * pool is served, and the metrics, /admin/state and the worker API name the pools.
 */
class ModelPoolsEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private TwoModelPools pools;
    private SimCluster big;
    private SimCluster small;
    private SimCluster spare;
    private GatewayServer gw;
    private String yaml;

    @BeforeEach
    void start() throws Exception {
        // the big pool's decode takes ~0.6 s a request (32 tokens x 20 ms): a burst piles up behind it
        pools = TwoModelPools.start(SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(20)),
                SimConfig.defaults().withHealthGeneration(false).withDecodeStep(Duration.ofMillis(1)));
        big = pools.big;
        small = pools.small;
        spare = SimCluster.start(0, 1, 0, SimConfig.defaults().withHealthGeneration(false).withModel("small-model")
                .withDecodeStep(Duration.ofMillis(1)), SimMode.UNIFIED);
        yaml = pools.yaml("listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\n"
                + "health: {interval: 200ms}\n"
                + "admission: {queue_timeout: 20s}\n",
                "{max_queued_requests: 1, prefill: {max_inflight_requests: 1}, decode: {max_inflight_streams: 1}}",
                null);
        gw = PdTestbed.startGateway(yaml);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            for (String pool : gw.poolNames()) {
                AdmissionController a = gw.admission(pool).orElseThrow();
                assertThat(eventually(Duration.ofSeconds(10), () -> a.snapshot().idle()))
                        .as("pool %s's admission back to zero: %s", pool, a.snapshot()).isTrue();
            }
            assertThat(eventually(Duration.ofSeconds(10), () -> gw.liveRequests() == 0)).isTrue();
        } finally {
            gw.close();
            pools.close();
            spare.close();
        }
    }

    private HttpResponse<String> chat(String model) throws Exception {
        String m = model == null ? "" : "\"model\":\"" + model + "\",";
        return http.send(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"),
                "{" + m + "\"max_tokens\":32,\"messages\":[{\"role\":\"user\",\"content\":\"hello pools\"}]}"),
                HttpResponse.BodyHandlers.ofString());
    }

    private String get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private static List<String> modelsSeen(List<? extends SimWorker> workers) {
        List<String> out = new ArrayList<>();
        for (SimWorker w : workers) {
            for (RecordedRequest r : w.journal()) {
                if (r.body() != null && r.body().has("messages")) {
                    out.add(r.body().path("model").asText("(none)"));
                }
            }
        }
        return out;
    }

    @Test
    void theModelPicksThePoolAndAnUnknownModelReachesNoWorker() throws Exception {
        assertThat(chat("big").statusCode()).isEqualTo(200);
        assertThat(chat("big-model").statusCode()).isEqualTo(200);
        assertThat(chat(null).statusCode()).as("no model: the default pool (the first)").isEqualTo(200);
        assertThat(chat("small-model").statusCode()).isEqualTo(200);
        assertThat(modelsSeen(big.prefillWorkers())).containsExactly("big", "big-model", "(none)");
        assertThat(modelsSeen(big.decodeWorkers())).containsExactly("big", "big-model", "(none)");
        assertThat(modelsSeen(small.unified())).containsExactly("small-model");

        HttpResponse<String> unknown = chat("gpt-4o");
        assertThat(unknown.statusCode()).isEqualTo(404);
        JsonNode error = JSON.readTree(unknown.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("model_not_found");
        assertThat(error.path("param").asText()).isEqualTo("model");
        assertThat(error.path("type").asText()).isEqualTo("invalid_request_error");
        assertThat(error.path("message").asText()).contains("gpt-4o").contains("big-model").contains("small-model");
        String metrics = get(gw.adminPort(), "/metrics");
        assertThat(sum(metrics, "sluice_requests_total\\{outcome=\"bad_request\",pool=\"\",route=\"chat_completions\",?\\}"))
                .as("refused before any pool: counted without one").isEqualTo(1);
        assertThat(sum(metrics, "sluice_requests_total\\{outcome=\"ok\",pool=\"big\",route=\"chat_completions\",?\\}"))
                .isEqualTo(3);
        assertThat(modelsSeen(big.workers())).hasSize(6); // the four above at both halves of big, none more
        assertThat(modelsSeen(small.unified())).hasSize(1);

        JsonNode models = JSON.readTree(get(gw.port(), "/v1/models"));
        assertThat(models.path("object").asText()).isEqualTo("list");
        List<String> ids = new ArrayList<>();
        models.path("data").forEach(m -> ids.add(m.path("id").asText() + "@" + m.path("pool").asText()));
        assertThat(ids).containsExactly("big-model@big", "big@big", "small-model@small");
    }

    @Test
    void onePoolFloodedPastItsQueueNeverRefusesTheOthersRequests() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> flood = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            flood.add(http.sendAsync(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + gw.port()
                    + "/v1/chat/completions"), "{\"model\":\"big\",\"max_tokens\":32,\"messages\":[{\"role\":\"user\","
                    + "\"content\":\"burst " + i + "\"}]}"), HttpResponse.BodyHandlers.ofString()));
        }
        List<Integer> smallStatus = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            smallStatus.add(chat("small-model").statusCode());
        }
        int ok = 0;
        int refused = 0;
        for (CompletableFuture<HttpResponse<String>> f : flood) {
            int s = f.get().statusCode();
            ok += s == 200 ? 1 : 0;
            refused += s == 429 || s == 503 ? 1 : 0;
        }
        assertThat(refused).as("the big pool refuses its own excess (queue of one, window of one)").isPositive();
        assertThat(ok + refused).isEqualTo(12);
        assertThat(ok).as("and serves what fits").isPositive();
        assertThat(smallStatus).as("every small-pool request served while big was flooded").containsOnly(200);

        int admin = gw.adminPort();
        String metrics = get(admin, "/metrics");
        assertThat(sum(metrics, "sluice_rejections_total\\{pool=\"big\",reason=\"[a-z_]+\",?\\}")).isEqualTo(refused);
        assertThat(sum(metrics, "sluice_rejections_total\\{pool=\"small\",reason=\"[a-z_]+\",?\\}")).isZero();
        assertThat(metrics).containsPattern("sluice_queue_depth\\{pool=\"small\",priority=\"normal\",?\\} 0\\.0")
                .containsPattern("sluice_worker_up\\{pool=\"small\",role=\"unified\",worker=\""
                        + Pattern.quote(small.unified().get(0).url().substring(7)) + "\",?\\} 1\\.0")
                .containsPattern("sluice_admission_limit\\{limit=\"max_queued_requests\",pool=\"big\",?\\} 1\\.0");
        // the request meters too: each pool's own, none of the small pool's refused
        assertThat(sum(metrics, "sluice_requests_total\\{outcome=\"ok\",pool=\"small\",route=\"chat_completions\",?\\}"))
                .isEqualTo(10);
        assertThat(sum(metrics, "sluice_requests_total\\{outcome=\"[a-z_]+\",pool=\"small\",route=\"[a-z_]+\",?\\}"))
                .isEqualTo(10);
        assertThat(sum(metrics, "sluice_requests_total\\{outcome=\"ok\",pool=\"big\",route=\"chat_completions\",?\\}"))
                .isEqualTo(ok);
        assertThat(sum(metrics, "sluice_request_duration_seconds_count\\{pool=\"small\",route=\"chat_completions\",?\\}"))
                .isEqualTo(10);

        JsonNode state = JSON.readTree(get(admin, "/admin/state"));
        List<String> pools = new ArrayList<>();
        state.path("pools").forEach(p -> pools.add(p.path("name").asText() + ":" + p.path("models").get(0).asText()
                + ":" + p.path("disaggregation").asText() + ":" + p.path("workers").size() + ":"
                + p.path("limits").path("max_queued_requests").asInt()));
        assertThat(pools).containsExactly("big:big-model:sglang:2:1", "small:small-model:none:1:32");
    }

    @Test
    void theWorkerApiAddsToTheNamedPool() throws Exception {
        int admin = gw.adminPort();
        String url = spare.unified().get(0).url();
        HttpResponse<String> added = http.send(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + admin
                + "/admin/workers"), "{\"pool\":\"small\",\"role\":\"unified\",\"url\":\"" + url + "\"}"),
                HttpResponse.BodyHandlers.ofString());
        assertThat(added.statusCode()).as(added.body()).isEqualTo(201);
        HttpResponse<String> nope = http.send(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + admin
                + "/admin/workers"), "{\"pool\":\"medium\",\"role\":\"unified\",\"url\":\"" + url + "\"}"),
                HttpResponse.BodyHandlers.ofString());
        assertThat(nope.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(nope.body()).at("/error/code").asText()).isEqualTo("pool_not_found");
        assertThat(JSON.readTree(nope.body()).at("/error/message").asText()).contains("big").contains("small");
        // the added worker takes requests of its pool once its check passed
        assertThat(eventually(Duration.ofSeconds(10), () -> {
            try {
                return chat("small-model").statusCode() == 200 && !modelsSeen(spare.unified()).isEmpty();
            } catch (Exception e) {
                return false;
            }
        })).as("the spare unified server, added to small, serves small-model").isTrue();
        assertThat(modelsSeen(spare.unified())).containsOnly("small-model");
    }

    @Test
    void aReloadChangesEachPoolsOwnLimitsAndRefusesToRemoveTheDefaultPool() throws Exception {
        String raised = yaml.replace("admission: {max_queued_requests: 1,", "admission: {max_queued_requests: 5,")
                .replace("      unified: [{url: " + small.unified().get(0).url() + "}]\n",
                        "      unified: [{url: " + small.unified().get(0).url() + "}]\n"
                                + "    admission: {max_queued_requests: 3}\n");
        var applied = gw.apply(dev.sluice.gateway.config.ConfigLoader.parse(raised, "raised.yaml"));
        assertThat(applied.applied()).contains("admission");
        assertThat(gw.admission("big").orElseThrow().config().maxQueuedRequests()).isEqualTo(5);
        assertThat(gw.admission("small").orElseThrow().config().maxQueuedRequests()).isEqualTo(3);
        assertThat(chat("small-model").statusCode()).isEqualTo(200);

        String renamed = raised.replace("models: [small-model]", "models: [small-model, tiny]");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> gw.apply(
                        dev.sluice.gateway.config.ConfigLoader.parse(renamed, "renamed.yaml")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("small")
                .hasMessageContaining("restart");
        // the default pool stays: a file without it (or naming another default) is refused whole
        String smallOnly = raised.substring(0, raised.indexOf("pools:\n")) + "pools:\n"
                + raised.substring(raised.indexOf("  - name: small\n"));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> gw.apply(
                        dev.sluice.gateway.config.ConfigLoader.parse(smallOnly, "small-only.yaml")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the default pool big cannot be removed");
        String otherDefault = raised + "default_pool: small\n";
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> gw.apply(
                        dev.sluice.gateway.config.ConfigLoader.parse(otherDefault, "other-default.yaml")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("default_pool: small");
        // nothing of the refused files was applied
        assertThat(gw.admission("small").orElseThrow().config().maxQueuedRequests()).isEqualTo(3);
        assertThat(chat("tiny").statusCode()).isEqualTo(404);
        assertThat(gw.poolNames()).containsExactly("big", "small");
    }

    private static double sum(String metrics, String seriesPattern) {
        Matcher m = Pattern.compile("(?m)^" + seriesPattern + " ([0-9.eE+-]+)$").matcher(metrics);
        double total = 0;
        while (m.find()) {
            total += Double.parseDouble(m.group(1));
        }
        return total;
    }
}
