package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.CoordinatedFleet;
import dev.sluice.testbed.sim.PrefillServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The share guard's figures travel between coordinated replicas (docs/routing.md, docs/scale-out.md):
 * two gateways with {@code cache_aware} prefill routing, coordinated through a real redis-server, in
 * front of a simulated 2P1D SGLang cluster. What one replica routed shows up, through its lease
 * renewals, as that peer's {@code routed_tokens_lately} in the other replica's {@code /admin/state},
 * and goes once the peer leaves. (What the guard then decides with them: CacheAwarePolicyTest.)
 */
class CoordinatedShareFiguresEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SYSTEM = "You are a careful assistant for the harbour office. ".repeat(80);

    @TempDir
    Path dir;
    private CoordinatedFleet fleet;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeEach
    void start() throws Exception {
        fleet = CoordinatedFleet.start(dir.resolve("redis"), 2, 50_000);
    }

    @AfterEach
    void stop() throws Exception {
        fleet.close();
    }

    private GatewayServer gateway(String id) throws Exception {
        return fleet.gateway(fleet.workersYaml() + "health: {interval: 200ms, timeout: 3s}\nadmin: {port: 0}\n"
                + "routing: {prefill: {policy: cache_aware}, decode: {policy: least_load}}\n"
                + fleet.coordinationYaml(id, "2s"));
    }

    private int chat(GatewayServer g, String user) throws Exception {
        ObjectNode body = JSON.createObjectNode().put("model", "sim-model").put("max_tokens", 2);
        body.putArray("messages").add(JSON.createObjectNode().put("role", "system").put("content", SYSTEM))
                .add(JSON.createObjectNode().put("role", "user").put("content", user));
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.port() + "/v1/chat/completions"))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    /** The figures {@code peerId} reported, as {@code g} last heard them (empty when it lists no such peer). */
    private Map<String, Long> routedOf(GatewayServer g, String peerId) throws Exception {
        JsonNode state = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.adminPort()
                + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString()).body());
        Map<String, Long> out = new HashMap<>();
        for (JsonNode p : state.path("coordination").path("peers")) {
            if (p.path("replica_id").asText().equals(peerId)) {
                p.path("routed_tokens_lately").fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asLong()));
                out.putIfAbsent("(listed)", 0L);
            }
        }
        return out;
    }

    private Map<String, Long> await(GatewayServer g, String peerId, java.util.function.Predicate<Map<String, Long>> ok)
            throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Map<String, Long> seen = routedOf(g, peerId);
        while (!ok.test(seen) && System.nanoTime() < until) {
            Thread.sleep(100);
            seen = routedOf(g, peerId);
        }
        return seen;
    }

    @Test
    void whatOneReplicaRoutedReachesTheOtherThroughRedisAndLeavesWithIt() throws Exception {
        GatewayServer a = gateway("gw-a");
        GatewayServer b = gateway("gw-b");
        for (int i = 0; i < 6; i++) {
            assertThat(chat(a, "Question " + i + ": when does the ferry leave?")).isEqualTo(200);
        }
        long sent = 6L * (SYSTEM.length() / 4);

        // b hears a's figures at a's next renewal: tokens per prefill URL, about what a sent (decayed a little)
        Map<String, Long> heard = await(b, "gw-a", m -> m.values().stream().mapToLong(Long::longValue).sum() > 0);
        long total = heard.entrySet().stream().filter(e -> e.getKey().startsWith("http")).mapToLong(Map.Entry::getValue)
                .sum();
        assertThat(total).as("%s", heard).isBetween(sent / 2, sent * 2);
        List<String> urls = fleet.cluster.prefills().stream().map(PrefillServer::url).toList();
        assertThat(heard.keySet()).as("%s", heard).allMatch(k -> k.equals("(listed)") || urls.contains(k));
        // b routed nothing: its own entry, as a sees it, carries no figures
        Map<String, Long> bAsSeenByA = await(a, "gw-b", m -> m.containsKey("(listed)"));
        assertThat(bAsSeenByA).containsOnlyKeys("(listed)");

        // a leaves (gives its leases back): b stops listing it, and with it its figures
        fleet.stop(a);
        assertThat(await(b, "gw-a", Map::isEmpty)).isEmpty();
        assertThat(b.admission().snapshot().idle()).isTrue();
    }
}
