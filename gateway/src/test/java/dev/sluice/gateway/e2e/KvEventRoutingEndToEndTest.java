package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.ReplicaPair;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two gateway replicas in front of one simulated cluster whose prefills publish their KV cache
 * events over real ZMQ (SGLang's format): a prompt one replica placed is routed to the same prefill
 * by the other replica, which never saw it, because both read the workers' own events.
 */
class KvEventRoutingEndToEndTest {
    private static final String SYSTEM = "You are a careful assistant for the Sluice project. ".repeat(40);
    private static final String TIMEOUTS = "{connect: 1s, first_token: 30s, idle_stream: 10s, request: 60s}";
    private static final String[] APPS = {"careful assistant", "terse reviewer", "playful tutor"};
    private final HttpClient http = HttpClient.newHttpClient();
    /** The test's gateway(s), closed after it: a replica pair, or one gateway. */
    private AutoCloseable open;

    @AfterEach
    void close() throws Exception {
        if (open != null) {
            open.close();
        }
    }

    @Test
    void aReplicaRoutesAPromptItNeverSawToThePrefillThatCachedIt() throws Exception {
        SimCluster cluster = SimCluster.start(3, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withHealthGeneration(false).withPrefixCacheTokens(SimConfig.DEFAULT_PREFIX_CACHE_TOKENS)
                .withKvEventsEndpoint("tcp://127.0.0.1:*"), SimMode.SGLANG);
        String yaml = yaml(cluster);
        ReplicaPair pair = ReplicaPair.start(cluster, yaml);
        open = pair;
        PdTestbed a = pair.a;
        PdTestbed b = pair.b;
        pair.awaitSubscribed(http, cluster, bed -> heardAll(bed, cluster));

        // replica A places each app's system prompt on its own prefill
        for (String app : APPS) {
            assertThat(a.post("/v1/chat/completions", chat(app, "first question")).statusCode()).isEqualTo(200);
        }
        List<Integer> afterA = counts(cluster);
        assertThat(afterA).containsExactly(1, 1, 1);
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> indexedEverywhere(b, cluster)))
                .as("replica B heard every prefill's stored blocks").isTrue();

        // replica B never saw those prompts; in reverse order, each goes where A put it
        for (int i = APPS.length - 1; i >= 0; i--) {
            assertThat(b.post("/v1/chat/completions", chat(APPS[i], "a question for B")).statusCode())
                    .isEqualTo(200);
        }
        for (PrefillServer p : cluster.prefills()) {
            List<String> apps = appsSeenBy(p);
            assertThat(apps).as("one app per prefill: %s", p).hasSize(2).allMatch(x -> x.equals(apps.get(0)));
        }
        assertThat(b.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}")).isEqualTo(3);
        assertThat(b.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"prefix_hit\","
                + "role=\"prefill\"}")).isEqualTo(3);
        assertThat(cluster.prefills().stream().mapToLong(p -> p.stats().prefixCacheHitTokens()).sum())
                .as("B's requests hit the caches A filled").isGreaterThan(3 * 400);
        String state = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + b.gateway.adminPort()
                + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString()).body();
        assertThat(state.replace(" ", "")).contains("\"kv_events\"").contains("\"freshness\":\"fresh\"");
    }

    @Test
    void withoutEventsFromAWorkerTheLocalTreeDecides() throws Exception {
        // events on, but the gateway listens where nothing publishes: every view stays missing
        SimCluster cluster = SimCluster.start(2, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withHealthGeneration(false).withPrefixCacheTokens(SimConfig.DEFAULT_PREFIX_CACHE_TOKENS),
                SimMode.SGLANG);
        StringBuilder yaml = new StringBuilder(base(cluster));
        yaml.append("routing:\n  prefill: {policy: cache_aware}\n  kv_events:\n    endpoints:\n");
        for (PrefillServer p : cluster.prefills()) {
            yaml.append("      \"").append(p.url()).append("\": \"tcp://127.0.0.1:1\"\n");
        }
        PdTestbed a = PdTestbed.adopt(cluster, PdTestbed.startGateway(yaml.toString()));
        open = a;
        for (int i = 0; i < 4; i++) {
            assertThat(a.post("/v1/chat/completions", chat(APPS[0], "question " + i)).statusCode()).isEqualTo(200);
        }
        assertThat(a.metric("sluice_kv_view_decisions_total{source=\"local_tree\"}")).isEqualTo(4);
        assertThat(a.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}")).isZero();
        assertThat(a.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"prefix_hit\","
                + "role=\"prefill\"}") + a.metric("sluice_routing_decisions_total{policy=\"cache_aware\","
                + "reason=\"share_override\",role=\"prefill\"}"))
                .as("today's behaviour: the local tree still finds the prefix").isEqualTo(3);
    }

    private static String chat(String app, String user) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"messages\":[{\"role\":\"system\",\"content\":\""
                + SYSTEM.replace("careful assistant", app) + "\"},{\"role\":\"user\",\"content\":\"" + user + "\"}]}";
    }

    private static String base(SimCluster cluster) {
        return PdTestbed.sglangYaml(cluster.prefills(), cluster.decodes(), TIMEOUTS);
    }

    private static String yaml(SimCluster cluster) {
        StringBuilder y = new StringBuilder(base(cluster));
        y.append("routing:\n  prefill: {policy: cache_aware}\n  kv_events:\n    endpoints:\n");
        y.append(PdTestbed.kvEventEndpoints(cluster.prefills()));
        return y.toString();
    }

    private static boolean heardAll(PdTestbed bed, SimCluster cluster) {
        return bed.samples("sluice_kv_events_received_total{").size() == cluster.prefills().size()
                && bed.samples("sluice_kv_events_received_total{").stream().allMatch(v -> v > 0);
    }

    private static boolean indexedEverywhere(PdTestbed bed, SimCluster cluster) {
        List<Double> blocks = bed.samples("sluice_kv_index_blocks{");
        return blocks.size() == cluster.prefills().size() && blocks.stream().allMatch(v -> v > 0);
    }


    private static List<Integer> counts(SimCluster cluster) {
        return cluster.prefills().stream().map(p -> appsSeenBy(p).size()).toList();
    }

    /** Which app's system prompt each chat this prefill served carried, in order. */
    private static List<String> appsSeenBy(PrefillServer p) {
        List<String> out = new ArrayList<>();
        for (RecordedRequest r : p.journal()) {
            if (r.method().equals("POST") && r.path().startsWith("/v1/")) {
                for (String app : APPS) {
                    if (r.body() != null && r.body().toString().contains(app)) {
                        out.add(app);
                    }
                }
            }
        }
        return out;
    }
}
