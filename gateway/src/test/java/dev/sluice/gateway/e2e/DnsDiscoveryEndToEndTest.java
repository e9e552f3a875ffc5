package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.e2e.DiscoveredWorkerChecks.generations;
import static dev.sluice.gateway.e2e.DiscoveredWorkerChecks.stream;
import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.TestDnsServer;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway following its decodes through SRV records of a real DNS server on loopback
 * ({@code workers.discovery.decode.dns.server}): a worker added to the answer gets traffic, one
 * removed mid-stream drains (its stream finishes, nothing new reaches it), an empty answer keeps the
 * last good set, and /admin/state names the source.
 */
class DnsDiscoveryEndToEndTest {
    private static final String NAME = "_http._tcp.decode.test.";
    private TestDnsServer dns;
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose();
        }
        if (dns != null) {
            dns.close();
        }
    }

    private static String srv(SimWorker w, String target) {
        return URI.create(w.url()).getPort() + " " + target;
    }

    @Test
    void srvAnswersAreFollowedAndAWorkerThatLeavesTheAnswerDrains() throws Exception {
        dns = new TestDnsServer();
        SimCluster cluster = SimCluster.start(1, 2, 0, SimConfig.defaults().withHealthGeneration(false)
                .withDecodeStep(Duration.ofMillis(20)), SimMode.SGLANG);
        PrefillServer prefill = cluster.prefills().get(0);
        DecodeServer first = cluster.decodes().get(0);
        DecodeServer second = cluster.decodes().get(1);
        dns.a.put("d1.test.", List.of("127.0.0.1"));
        dns.a.put("d2.test.", List.of("127.0.0.1"));
        dns.srv.put(NAME, List.of(srv(first, "d1.test")));
        String yaml = "listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\n"
                + "disaggregation: sglang\nworkers:\n  prefill:\n    - url: " + prefill.url() + "\n      bootstrap_port: "
                + prefill.bootstrapPort() + "\n  discovery:\n    decode:\n      dns:\n        name: " + NAME + "\n"
                + "        server: 127.0.0.1:" + dns.address().getPort() + "\n        min_interval: 100ms\n"
                + "timeouts: {connect: 1s, first_token: 30s, idle_stream: 10s}\n"
                + "health: {interval: 200ms, timeout: 500ms}\ntelemetry: {interval: 200ms}\nadmin: {port: 0}\n"
                + "routing: {prefill: {policy: round_robin}, decode: {policy: round_robin}}\n";
        GatewayServer gateway;
        try {
            gateway = new GatewayServer(ConfigLoader.parse(yaml, "test")).start();
        } catch (Exception | Error e) {
            cluster.close();
            throw e;
        }
        bed = PdTestbed.adopt(cluster, gateway);
        assertThat(gateway.awaitReady(20, TimeUnit.SECONDS)).isTrue();
        assertThat(bed.post("/generate", stream(2)).statusCode()).isEqualTo(200);
        assertThat(generations(first)).isEqualTo(1);

        // the second decode joins the answer: traffic after its checks (the TTL is 1 s)
        dns.srv.put(NAME, List.of(srv(first, "d1.test"), srv(second, "d2.test")));
        assertThat(DiscoveredWorkerChecks.getsTraffic(bed, second, Duration.ofSeconds(10)))
                .as("the new SRV target gets traffic").isTrue();
        JsonNode state = new ObjectMapper().readTree(bed.http.send(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + gateway.adminPort() + "/admin/state")).build(),
                HttpResponse.BodyHandlers.ofString()).body());
        assertThat(state.path("workers").findValuesAsText("source")).contains("file", "dns");

        // the first leaves the answer while it streams: drained, the stream finishes, nothing new
        CompletableFuture<HttpResponse<String>> longOne = DiscoveredWorkerChecks.streamRunningOn(bed, first);
        assertThat(longOne).as("a stream runs on the first decode").isNotNull();
        dns.srv.put(NAME, List.of(srv(second, "d2.test")));
        DiscoveredWorkerChecks.drainedThenRetired(bed, gateway, first, longOne);

        // an empty answer keeps the last good set
        dns.srv.put(NAME, List.of());
        int asked = dns.queries.get();
        assertThat(eventually(Duration.ofSeconds(5), () -> dns.queries.get() > asked + 2)).isTrue();
        assertThat(gateway.workers().decode()).hasSize(1);
        assertThat(bed.post("/generate", stream(2)).statusCode()).isEqualTo(200);
    }
}
