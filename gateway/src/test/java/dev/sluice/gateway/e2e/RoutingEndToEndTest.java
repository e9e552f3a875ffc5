package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Cache-aware routing through the real gateway: clients that share a long system prompt land on
 * the same prefill worker (where its prefix cache holds it) while the load stays inside the
 * balance guard, and spread to another worker when it does not.
 */
class RoutingEndToEndTest {
    private static final String SYSTEM = "You are a careful assistant for the Sluice project. ".repeat(80);
    private static final String TIMEOUTS = "{connect: 1s, first_token: 30s, idle_stream: 10s, request: 60s}";
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private static String chat(String user) {
        return "{\"model\":\"sim-model\",\"max_tokens\":4,\"messages\":[{\"role\":\"system\",\"content\":\"" + SYSTEM
                + "\"},{\"role\":\"user\",\"content\":\"" + user + "\"}]}";
    }

    private static int generations(PrefillServer p) {
        int n = 0;
        for (RecordedRequest r : p.journal()) {
            if (r.method().equals("POST") && r.path().startsWith("/v1/")) {
                n++;
            }
        }
        return n;
    }

    @Test
    void clientsSharingASystemPromptLandOnOnePrefillInsideTheGuard() throws Exception {
        bed = PdTestbed.start(3, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)), TIMEOUTS,
                "routing: {prefill: {policy: cache_aware}, decode: {policy: least_load}}\n");
        // three apps with equal traffic, each its own system prompt: each keeps to one prefill
        String[] apps = {"careful assistant", "terse reviewer", "playful tutor"};
        for (int i = 0; i < 6; i++) {
            for (String app : apps) {
                HttpResponse<String> r = bed.post("/v1/chat/completions",
                        chat("question number " + i + " about routing").replace("careful assistant", app));
                assertThat(r.statusCode()).isEqualTo(200);
            }
        }
        List<Integer> counts = bed.cluster.prefills().stream().map(RoutingEndToEndTest::generations).toList();
        assertThat(counts).as("prefill requests per worker").containsExactly(6, 6, 6);
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"prefix_miss\","
                + "role=\"prefill\"}")).isEqualTo(3);
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"prefix_hit\","
                + "role=\"prefill\"}")).isEqualTo(15);
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"share_override\","
                + "role=\"prefill\"}")).isZero();
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"least_load\",reason=\"least_load\","
                + "role=\"decode\"}")).isEqualTo(18);
    }

    @Test
    void aHotPromptAloneSpreadsByItsShareOfRecentTraffic() throws Exception {
        // one app sending everything at low load: the windows stay near empty (the balance guard
        // never trips), but the share guard moves new conversations off a worker taking it all
        bed = PdTestbed.start(3, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)), TIMEOUTS,
                "routing: {prefill: {policy: cache_aware}}\n");
        for (int i = 0; i < 12; i++) {
            assertThat(bed.post("/v1/chat/completions", chat("conversation " + i)).statusCode()).isEqualTo(200);
        }
        List<Integer> counts = bed.cluster.prefills().stream().map(RoutingEndToEndTest::generations).toList();
        assertThat(counts).as("prefill requests per worker").allMatch(n -> n >= 2 && n <= 6);
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"share_override\","
                + "role=\"prefill\"}")).isPositive();
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"balance_override\","
                + "role=\"prefill\"}")).isZero();
    }

    @Test
    void theySpreadWhenTheLoadPassesTheGuard() throws Exception {
        // a slow prefill keeps the prompts in the window; the guard trips after a few tokens of imbalance
        bed = PdTestbed.start(2, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                        .withPrefillTokensPerSecond(4000), TIMEOUTS,
                "routing: {prefill: {policy: cache_aware, cache_aware: {balance_abs_threshold: 600,"
                        + " balance_rel_threshold: 1.5}}}\n"
                        + "admission: {prefill: {max_inflight_requests: 16}}\n");
        bed.post("/v1/chat/completions", chat("warm the cache"));
        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            calls.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/v1/chat/completions"), chat("burst " + i)),
                    HttpResponse.BodyHandlers.ofString()));
        }
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            assertThat(c.get().statusCode()).isEqualTo(200);
        }
        List<Integer> counts = bed.cluster.prefills().stream().map(RoutingEndToEndTest::generations).toList();
        assertThat(counts).as("prefill requests per worker").allMatch(n -> n >= 2);
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"balance_override\","
                + "role=\"prefill\"}")).isPositive();
    }
}
