package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 29: two prefills publishing in SGLang's wire format, the first configured with an event
 * endpoint that does not resolve. Before, the subscriber failed at start and the second's events
 * were never read. Now the bad stream alone retries with backoff: the second's events arrive and
 * are indexed, the up gauge says which stream is connected, and requests are served. And the
 * second's events decide for it: prompts another replica placed on it (this gateway never saw them)
 * are routed to it by its events, though the first worker's view is never fresh (before, any
 * candidate without a fresh view put every decision on the local tree, and they went where a miss
 * goes).
 */
class KvEventUnresolvableEndpointEndToEndTest {
    private static final String SYSTEM = "You are a careful assistant for the Sluice project. ".repeat(40);
    /** System prompts that differ from their first word: no block in common with each other or with SYSTEM. */
    private static final List<String> APPS = List.of("Ardent", "Brisk", "Candid", "Deft");
    private final HttpClient http = HttpClient.newHttpClient();
    private PdTestbed bed;
    private PdTestbed other;

    @AfterEach
    void close() throws Exception {
        try {
            if (other != null) {
                other.close();
            }
        } finally {
            if (bed != null) {
                bed.close();
            }
        }
    }

    @Test
    void aWorkerWhoseEndpointDoesNotResolveLeavesTheOthersSubscribed() throws Exception {
        SimCluster cluster = SimCluster.start(2, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withHealthGeneration(false).withPrefixCacheTokens(SimConfig.DEFAULT_PREFIX_CACHE_TOKENS)
                .withKvEventsEndpoint("tcp://127.0.0.1:*"), SimMode.SGLANG);
        PrefillServer bad = cluster.prefills().get(0);
        PrefillServer good = cluster.prefills().get(1);
        StringBuilder y = new StringBuilder("listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\n"
                + "disaggregation: sglang\nworkers:\n  prefill:\n");
        for (PrefillServer p : cluster.prefills()) {
            y.append("    - url: ").append(p.url()).append("\n      bootstrap_port: ").append(p.bootstrapPort())
                    .append('\n');
        }
        y.append("  decode:\n");
        for (DecodeServer d : cluster.decodes()) {
            y.append("    - url: ").append(d.url()).append('\n');
        }
        y.append("timeouts: {connect: 1s, first_token: 30s, idle_stream: 10s, request: 60s}\n")
                .append("health: {interval: 200ms, timeout: 500ms}\ntelemetry: {interval: 200ms}\nadmin: {port: 0}\n")
                // the share guard off: it would move new conversations off a worker another replica kept busy
                .append("routing:\n  prefill: {policy: cache_aware, cache_aware: {balance_share_threshold: 0}}\n")
                .append("  kv_events:\n    endpoints:\n")
                .append("      \"").append(bad.url()).append("\": \"tcp://no-such-host.invalid:5557\"\n")
                .append(PdTestbed.kvEventEndpoints(List.of(good)));
        bed = PdTestbed.adopt(cluster, PdTestbed.startGateway(y.toString()));
        String badName = URI.create(bad.url()).getAuthority();
        String goodName = URI.create(good.url()).getAuthority();

        assertThat(PdTestbed.eventually(Duration.ofSeconds(20), () ->
                bed.samples("sluice_kv_events_up{rank=\"0\",worker=\"" + goodName + "\"").equals(List.of(1.0))))
                .as("the good stream connected").isTrue();
        PdTestbed.awaitSubscribed(http, List.of(good), () ->
                bed.samples("sluice_kv_events_received_total{worker=\"" + goodName + "\"").stream()
                        .anyMatch(v -> v > 0));
        assertThat(bed.samples("sluice_kv_events_up{rank=\"0\",worker=\"" + badName + "\"")).containsExactly(0.0);
        assertThat(bed.samples("sluice_kv_events_received_total{worker=\"" + badName + "\"")).containsExactly(0.0);

        // prompts sent until the good prefill caches one: its stored blocks reach the view (each new from its
        // first token, a miss: misses spread over both prefills)
        assertThat(PdTestbed.eventually(Duration.ofSeconds(20), () -> {
            assertThat(served(chat(System.nanoTime() + " " + SYSTEM, "q"))).isEqualTo(200);
            return bed.samples("sluice_kv_index_blocks{worker=\"" + goodName + "\"").stream().anyMatch(v -> v > 0);
        })).as("the good worker's events arrive and are indexed").isTrue();
        assertThat(bed.samples("sluice_kv_events_last_event_age_seconds{rank=\"0\",worker=\"" + goodName + "\""))
                .singleElement().satisfies(age -> assertThat(age).isBetween(0.0, 30.0));
        assertThat(bed.samples("sluice_kv_events_malformed_total{worker=\"" + goodName + "\"")).containsExactly(0.0);

        // another replica (in front of the good prefill only) places each app's system prompt there
        other = PdTestbed.adopt(cluster, PdTestbed.startGateway(y.toString().replaceFirst(
                "    - url: " + java.util.regex.Pattern.quote(bad.url()) + "\n      bootstrap_port: \\d+\n", "")
                .replaceFirst("(?s)routing:.*", "")));
        String blocks = "sluice_kv_index_blocks{worker=\"" + goodName + "\"";
        for (String app : APPS) {
            double before = bed.samples(blocks).get(0);
            assertThat(other.post("/v1/chat/completions", chat(app + SYSTEM, "placed elsewhere")).statusCode())
                    .isEqualTo(200);
            assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> bed.samples(blocks).get(0) > before))
                    .as("%s's blocks reached this gateway's view", app).isTrue();
        }
        assertThat(appsSeenBy(good)).hasSize(APPS.size());
        double events = bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}");
        double hits = bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"prefix_hit\","
                + "role=\"prefill\"}");

        // this gateway never saw those prompts: each goes to the prefill whose events hold it
        for (String app : APPS) {
            assertThat(served(chat(app + SYSTEM, "a question here"))).isEqualTo(200);
        }
        assertThat(appsSeenBy(good)).as("every app's second turn on the prefill that cached it")
                .hasSize(2 * APPS.size());
        assertThat(appsSeenBy(bad)).isEmpty();
        assertThat(bed.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}") - events)
                .as("decided by the good worker's events").isEqualTo(APPS.size());
        assertThat(bed.metric("sluice_routing_decisions_total{policy=\"cache_aware\",reason=\"prefix_hit\","
                + "role=\"prefill\"}") - hits).isEqualTo(APPS.size());
        assertThat(bed.samples("sluice_kv_view_fresh{worker=\"" + badName + "\"")).containsExactly(0.0);
        assertThat(bed.samples("sluice_kv_view_fresh{worker=\"" + goodName + "\"")).containsExactly(1.0);
    }

    /** The apps whose system prompt each chat this prefill served carried, in order. */
    private static List<String> appsSeenBy(PrefillServer p) {
        List<String> out = new java.util.ArrayList<>();
        for (dev.sluice.testbed.sim.RecordedRequest r : p.journal()) {
            if (r.method().equals("POST") && r.path().startsWith("/v1/") && r.body() != null) {
                for (String app : APPS) {
                    if (r.body().toString().contains(app + SYSTEM.substring(0, 20))) {
                        out.add(app);
                    }
                }
            }
        }
        return out;
    }

    private int served(String body) {
        try {
            return bed.post("/v1/chat/completions", body).statusCode();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String chat(String system, String user) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"messages\":[{\"role\":\"system\",\"content\":\""
                + system + "\"},{\"role\":\"user\",\"content\":\"" + user + "\"}]}";
    }
}
