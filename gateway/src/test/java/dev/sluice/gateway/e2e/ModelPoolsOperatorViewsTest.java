package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.cli.StatusCommand;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.TwoModelPools;
import dev.sluice.testbed.sim.SimCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * What an operator sees of two model pools, from a real gateway over simulated workers: the
 * {@code status} command's section per pool, and {@code /readiness} following every pool (ready while
 * one pool serves and the other has no worker; not before every pool had its first verdicts).
 */
class ModelPoolsOperatorViewsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final List<AutoCloseable> closing = new ArrayList<>();
    private TwoModelPools pools;
    private SimCluster big;
    private SimCluster small;

    @AfterEach
    void stop() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    private String yaml(String smallUrl) {
        return pools.yaml("listen: {host: 127.0.0.1, port: 0, internal_endpoints: true}\nadmin: {port: 0}\n"
                + "health: {interval: 100ms, unhealthy_threshold: 1, healthy_threshold: 1}\n",
                "{max_queued_requests: 7}", smallUrl, "{max_queued_requests: 5, max_pending_tokens: 9000}");
    }

    private void startWorkers() throws Exception {
        pools = TwoModelPools.start();
        closing.add(pools);
        big = pools.big;
        small = pools.small;
    }

    /** Polls {@code check} for up to 10 s; an exception (e.g. a refused connection) counts as not yet. */
    private static boolean until(java.util.concurrent.Callable<Boolean> check) throws InterruptedException {
        return eventually(Duration.ofSeconds(10), () -> {
            try {
                return check.call();
            } catch (Exception e) {
                return false;
            }
        });
    }

    private HttpResponse<String> readiness(GatewayServer gw) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/readiness")).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode pool(HttpResponse<String> readiness, String name) throws Exception {
        for (JsonNode p : JSON.readTree(readiness.body()).path("pools")) {
            if (p.path("name").asText().equals(name)) {
                return p;
            }
        }
        throw new AssertionError("no pool " + name + " in " + readiness.body());
    }

    @Test
    void statusShowsEveryPoolWithItsBudgetAndWorkers() throws Exception {
        startWorkers();
        GatewayServer gw = PdTestbed.startGateway(yaml(small.unified().get(0).url()));
        closing.add(gw);
        StringWriter out = new StringWriter();
        int code = new CommandLine(new StatusCommand()).setOut(new PrintWriter(out))
                .execute("--admin", "http://127.0.0.1:" + gw.adminPort(), "--once");
        String view = out.toString();
        assertThat(code).as(view).isZero();
        assertThat(view).contains("pool big (default)  models big-model,big  sglang  ready")
                .contains("pool small  models small-model  none  ready")
                .containsPattern("(?m)^live +0 requests$").contains("0 / 7 requests").contains("0 / 5 requests").contains("0 / 9000 prompt tokens");
        // each pool's section lists its own workers: big's pair before the small section, small's unified after
        int smallSection = view.indexOf("pool small");
        String bigPrefill = big.prefills().get(0).url().substring("http://".length());
        String smallUnified = small.unified().get(0).url().substring("http://".length());
        assertThat(view.indexOf(bigPrefill)).isBetween(view.indexOf("pool big"), smallSection);
        assertThat(view.indexOf(smallUnified)).isGreaterThan(smallSection);
        assertThat(view).containsPattern("unified +" + java.util.regex.Pattern.quote(smallUnified) + " +file +healthy");
    }

    /** Without pools: the one view of before (no pool sections; the live count on the prefill line). */
    @Test
    void withoutPoolsStatusIsTheOneViewOfBefore() throws Exception {
        startWorkers();
        GatewayServer gw = PdTestbed.startGateway("listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\n"
                + "workers:\n  prefill: [{url: " + big.prefills().get(0).url() + ", bootstrap_port: "
                + big.prefills().get(0).bootstrapPort() + "}]\n  decode: [{url: " + big.decodes().get(0).url() + "}]\n");
        closing.add(gw);
        StringWriter out = new StringWriter();
        new CommandLine(new StatusCommand()).setOut(new PrintWriter(out))
                .execute("--admin", "http://127.0.0.1:" + gw.adminPort(), "--once");
        assertThat(out.toString()).doesNotContainPattern("(?m)^pool ").doesNotContainPattern("(?m)^live ")
                .containsPattern("(?m)^prefill .* dispatched 0   live 0$").contains("0 / 32 requests");
    }

    @Test
    void aPoolWithoutWorkersKeepsTheReplicaReadyWhileAnotherServes() throws Exception {
        startWorkers();
        GatewayServer gw = PdTestbed.startGateway(yaml(small.unified().get(0).url()));
        closing.add(gw);
        HttpResponse<String> both = readiness(gw);
        assertThat(both.statusCode()).as(both.body()).isEqualTo(200);
        assertThat(pool(both, "small").path("reason").asText()).isEqualTo("serving");
        assertThat(JSON.readTree(both.body()).at("/usable/unified/usable").asInt()).isEqualTo(1);

        small.unified().get(0).faults().setHealthStatus(503);
        assertThat(until(() -> !pool(readiness(gw), "small").path("ready").asBoolean()))
                .isTrue();
        HttpResponse<String> oneDown = readiness(gw);
        assertThat(oneDown.statusCode()).as("big still serves: " + oneDown.body()).isEqualTo(200);
        assertThat(pool(oneDown, "small").path("reason").asText()).isEqualTo("no usable unified worker (ejected)");
        assertThat(pool(oneDown, "small").path("workers").get(0).path("state").asText()).isEqualTo("ejected");
        assertThat(pool(oneDown, "big").path("ready").asBoolean()).isTrue();

        big.decodes().get(0).faults().setHealthStatus(503);
        assertThat(until(() -> readiness(gw).statusCode() == 503)).isTrue();
        assertThat(pool(readiness(gw), "big").path("reason").asText()).isEqualTo("no usable decode worker (ejected)");

        small.unified().get(0).faults().setHealthStatus(200);
        assertThat(until(() -> readiness(gw).statusCode() == 200))
                .as("small back: one pool serves again").isTrue();
        JsonNode state = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + gw.adminPort() + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString()).body());
        assertThat(state.path("ready").asBoolean()).as("/admin/state follows the same rule").isTrue();
    }

    /** A worker that takes the connection and never answers keeps its pool's first verdict, and readiness, waiting. */
    @Test
    void noReadinessBeforeEveryPoolHadItsFirstVerdict() throws Exception {
        startWorkers();
        ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        closing.add(silent);
        List<Socket> accepted = new ArrayList<>();
        Thread acceptor = new Thread(() -> {
            try {
                while (true) {
                    accepted.add(silent.accept()); // kept open, never answered
                }
            } catch (java.io.IOException closed) {
                // the test is over
            }
        });
        acceptor.start();
        String y = yaml("http://127.0.0.1:" + silent.getLocalPort())
                .replace("health: {interval: 100ms,", "health: {timeout: 30s, interval: 100ms,");
        GatewayServer gw = new GatewayServer(ConfigLoader.parse(y, "test")).start();
        closing.add(gw);
        assertThat(until(() -> pool(readiness(gw), "big").path("ready").asBoolean()))
                .isTrue();
        HttpResponse<String> waiting = readiness(gw);
        assertThat(waiting.statusCode()).as(waiting.body()).isEqualTo(503);
        assertThat(pool(waiting, "small").path("started").asBoolean()).isFalse();
        assertThat(pool(waiting, "small").path("reason").asText())
                .isEqualTo("1 of 1 workers awaiting their first health check");

        silent.close(); // connections refused from now on, and the open ones end: the check fails, a verdict
        acceptor.join(5000);
        for (Socket s : accepted) {
            s.close();
        }
        assertThat(until(() -> readiness(gw).statusCode() == 200)).isTrue();
        assertThat(pool(readiness(gw), "small").path("started").asBoolean()).isTrue();
        assertThat(pool(readiness(gw), "small").path("ready").asBoolean()).isFalse();

        // the first verdicts are waited for at start-up only: a silent worker added later keeps the replica ready
        ServerSocket later = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        closing.add(later);
        HttpResponse<String> added = http.send(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + gw.adminPort()
                + "/admin/workers"), "{\"pool\":\"small\",\"role\":\"unified\",\"url\":\"http://127.0.0.1:"
                + later.getLocalPort() + "\"}"), HttpResponse.BodyHandlers.ofString());
        assertThat(added.statusCode()).as(added.body()).isEqualTo(201);
        assertThat(until(() -> pool(readiness(gw), "small").path("reason").asText()
                .equals("1 of 2 workers awaiting their first health check"))).isTrue();
        HttpResponse<String> stillReady = readiness(gw);
        assertThat(stillReady.statusCode()).as(stillReady.body()).isEqualTo(200);
        assertThat(pool(stillReady, "small").path("started").asBoolean()).isTrue();
    }
}
