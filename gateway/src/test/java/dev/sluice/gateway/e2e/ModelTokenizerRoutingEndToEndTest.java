package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code routing.kv_events.tokenizer: hf} end to end: the gateway computes a chat prompt's token ids
 * with the model's tokenizer.json and chat template (test resources {@code tokenizer/chatml}), and routes
 * by the blocks the simulated prefills published for those ids over real ZMQ.
 *
 * <p>The simulator tokenizes text its own way, so each prefill is primed with the ids a real SGLang
 * would compute for a first chat turn, sent as {@code input_ids} to /generate; the ids are written here
 * by hand from the template's output and the vocabulary (ModelTokenizerTest says how). A second chat
 * turn sharing that prefix, which the local prefix tree has never seen as text, must go to the prefill
 * that stored it.
 */
class ModelTokenizerRoutingEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 30s, idle_stream: 10s, request: 60s}";
    private static final Path TOKENIZER = Path.of("src/test/resources/tokenizer/chatml/tokenizer.json");
    // an app's system prompt: its own first word, then a shared body; vocab ids in ModelTokenizerTest
    private static final String[] APPS = {"hello", "world", "fine"};
    private static final int[] APP_IDS = {12, 13, 29};
    private static final String BODY = " the quick brown fox .".repeat(24);
    private static final String PREFIX_HITS = "sluice_routing_decisions_total{policy=\"cache_aware\","
            + "reason=\"prefix_hit\",role=\"prefill\"}";
    private final HttpClient http = HttpClient.newHttpClient();
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.close();
        }
    }

    @Test
    void aSecondChatTurnGoesToThePrefillHoldingTheFirstTurnsTokens() throws Exception {
        SimCluster cluster = SimCluster.start(3, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withHealthGeneration(false).withPrefixCacheTokens(SimConfig.DEFAULT_PREFIX_CACHE_TOKENS)
                .withKvEventsEndpoint("tcp://127.0.0.1:*"), SimMode.SGLANG);
        bed = PdTestbed.adopt(cluster, PdTestbed.startGateway(yaml(cluster)));
        awaitSubscribed(cluster);

        // each app's first turn, primed as the token ids SGLang computes for it
        List<Optional<PrefillServer>> primedOn = new ArrayList<>();
        for (int app = 0; app < APPS.length; app++) {
            HttpResponse<String> r = bed.post("/generate", "{\"input_ids\":" + idsJson(firstTurnIds(app))
                    + ",\"sampling_params\":{\"max_new_tokens\":2}}");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            primedOn.add(prefillThatServed(cluster, APP_IDS[app]));
        }
        assertThat(primedOn).allMatch(Optional::isPresent);
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> blocksIndexed(bed) >= 3 * 6))
                .as("the gateway heard the stored blocks").isTrue();

        // the second turns, as chat messages, in reverse order
        double viewBefore = bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}");
        double hitsBefore = bed.metric(PREFIX_HITS);
        for (int app = APPS.length - 1; app >= 0; app--) {
            HttpResponse<String> r = bed.post("/v1/chat/completions", secondTurn(app));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        for (int app = 0; app < APPS.length; app++) {
            PrefillServer p = primedOn.get(app).orElseThrow();
            assertThat(chatAppsSeenBy(p)).as("%s's chat went where its first turn is cached", APPS[app])
                    .contains(APPS[app]);
        }
        assertThat(bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}") - viewBefore)
                .as("the view decided each chat").isEqualTo(3);
        assertThat(bed.metric(PREFIX_HITS) - hitsBefore).as("each a prefix hit").isEqualTo(3);
        assertThat(bed.metric("sluice_kv_events_prompts_unmatched_total{reason=\"template\"}")).isZero();
    }

    @Test
    void aChatTheTemplateRefusesIsServedByTheLocalTreeAndCounted() throws Exception {
        SimCluster cluster = SimCluster.start(2, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withHealthGeneration(false).withKvEventsEndpoint("tcp://127.0.0.1:*"), SimMode.SGLANG);
        bed = PdTestbed.adopt(cluster, PdTestbed.startGateway(yaml(cluster)));
        // the chat asks for tools: the engines hand them to the template, the gateway does not reproduce that
        HttpResponse<String> r = bed.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"max_tokens\":2,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],\"tools\":[{\"type\":\"function\","
                + "\"function\":{\"name\":\"f\",\"parameters\":{}}}]}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(bed.metric("sluice_kv_events_prompts_unmatched_total{reason=\"unsupported\"}")).isEqualTo(1);
    }

    /** ChatML: {@code <|im_start|>system\n{app}{BODY}<|im_end|>\n<|im_start|>user\nhow is it going ?<|im_end|>\n<|im_start|>assistant\n}. */
    private static List<Integer> firstTurnIds(int app) {
        List<Integer> ids = new ArrayList<>(List.of(3, 5, APP_IDS[app]));
        for (int i = 0; i < 24; i++) {
            ids.addAll(List.of(14, 15, 16, 17, 18));
        }
        ids.addAll(List.of(4, 3, 11, 24, 25, 26, 27, 28, 4, 3, 10));
        return ids;
    }

    private static String secondTurn(int app) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"messages\":[{\"role\":\"system\",\"content\":\""
                + APPS[app] + BODY + "\"},{\"role\":\"user\",\"content\":\"how is it going ?\"},{\"role\":\"assistant\","
                + "\"content\":\"fine , thanks\"},{\"role\":\"user\",\"content\":\"hello world\"}]}";
    }

    private static String idsJson(List<Integer> ids) {
        return ids.toString().replace(" ", "");
    }

    private static Optional<PrefillServer> prefillThatServed(SimCluster cluster, int appId) {
        for (PrefillServer p : cluster.prefills()) {
            for (RecordedRequest r : p.journal()) {
                JsonNode ids = body(r).path("input_ids");
                if (r.path().startsWith("/generate") && ids.size() > 2 && ids.get(2).asInt() == appId) {
                    return Optional.of(p);
                }
            }
        }
        return Optional.empty();
    }

    private static List<String> chatAppsSeenBy(PrefillServer p) {
        List<String> out = new ArrayList<>();
        for (RecordedRequest r : p.journal()) {
            if (r.path().startsWith("/v1/chat")) {
                String system = body(r).path("messages").path(0).path("content").asText("");
                for (String app : APPS) {
                    if (system.startsWith(app + " ")) {
                        out.add(app);
                    }
                }
            }
        }
        return out;
    }

    private static JsonNode body(RecordedRequest r) {
        try {
            return r.body() == null ? JSON.createObjectNode() : JSON.readTree(r.body().toString());
        } catch (Exception e) {
            return JSON.createObjectNode();
        }
    }

    private static String yaml(SimCluster cluster) {
        StringBuilder y = new StringBuilder(PdTestbed.sglangYaml(cluster.prefills(), cluster.decodes(), TIMEOUTS));
        y.append("admission:\n  tokenizer: {path: \"").append(TOKENIZER.toAbsolutePath()).append("\"}\n")
                .append("routing:\n  prefill: {policy: cache_aware}\n  kv_events:\n    tokenizer: hf\n    endpoints:\n");
        y.append(PdTestbed.kvEventEndpoints(cluster.prefills()));
        return y.toString();
    }

    /** PUB drops what it sends before a subscription arrives: flush the caches until the gateway hears each. */
    private void awaitSubscribed(SimCluster cluster) throws Exception {
        PdTestbed.awaitSubscribed(http, cluster.prefills(), () -> bed.samples("sluice_kv_events_received_total{")
                .stream().filter(v -> v > 0).count() == cluster.prefills().size());
    }

    private static double blocksIndexed(PdTestbed bed) {
        return bed.samples("sluice_kv_index_blocks{").stream().mapToDouble(Double::doubleValue).sum();
    }

}
