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
 * are indexed, the up gauge says which stream is connected, and requests are served.
 */
class KvEventUnresolvableEndpointEndToEndTest {
    private static final String SYSTEM = "You are a careful assistant for the Sluice project. ".repeat(40);
    private final HttpClient http = HttpClient.newHttpClient();
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.close();
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
                .append("routing:\n  prefill: {policy: cache_aware}\n  kv_events:\n    endpoints:\n")
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

        // prompts sent until the good prefill caches one: its stored blocks reach the view
        assertThat(PdTestbed.eventually(Duration.ofSeconds(20), () -> {
            assertThat(served(chat("q " + System.nanoTime()))).isEqualTo(200);
            return bed.samples("sluice_kv_index_blocks{worker=\"" + goodName + "\"").stream().anyMatch(v -> v > 0);
        })).as("the good worker's events arrive and are indexed").isTrue();
        assertThat(bed.samples("sluice_kv_events_last_event_age_seconds{rank=\"0\",worker=\"" + goodName + "\""))
                .singleElement().satisfies(age -> assertThat(age).isBetween(0.0, 30.0));
        assertThat(bed.samples("sluice_kv_events_malformed_total{worker=\"" + goodName + "\"")).containsExactly(0.0);
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

    private static String chat(String user) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"messages\":[{\"role\":\"system\",\"content\":\""
                + SYSTEM + "\"},{\"role\":\"user\",\"content\":\"" + user + "\"}]}";
    }
}
