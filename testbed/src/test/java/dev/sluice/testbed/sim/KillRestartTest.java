package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.onLoop;
import static dev.sluice.testbed.sim.SimClient.onLoopTrue;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A worker process that dies mid-request and comes back on the same port. */
class KillRestartTest {
    private static final Duration LONG = Duration.ofSeconds(20);
    private SimCluster cluster;
    private PrefillServer prefill;
    private DecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeEach
    void start() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withPrefillTokensPerSecond(1_000).withKvWait(LONG).withBootstrapTimeout(LONG));
        prefill = cluster.prefills().get(0);
        decode = cluster.decodes().get(0);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            assertThat(prefill.awaitIdle(Duration.ofSeconds(5))).as("prefill idle").isTrue();
            assertThat(decode.awaitIdle(Duration.ofSeconds(5))).as("decode idle").isTrue();
        } finally {
            cluster.close(); // also when a test leaves a server killed
        }
    }

    @Test
    void killEndsTheStreamRefusesConnectionsAndRestartServesOnTheSamePort() throws Exception {
        int port = decode.port();
        ObjectNode body = pd("{\"text\":\"go\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":100000}}",
                prefill, "doomed", nextRoom());
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", body);
        List<String> afterKill;
        try (RawHttp stream = new RawHttp(decode)) {
            stream.send("POST", "/generate", body.toString());
            int events = 0;
            while (events < 3) {
                String line = stream.readLine();
                assertThat(line).as("stream open").isNotNull();
                events += line.startsWith("data:") ? 1 : 0;
            }

            decode.kill();

            assertThat(decode.isRunning()).isFalse();
            assertThat(decode.port()).isEqualTo(port);
            assertThat(decode.url()).endsWith(":" + port);
            afterKill = stream.readToEof();
        }
        assertThat(afterKill).as("the stream is cut, not finished").noneMatch(l -> l.contains("[DONE]"));
        // kill() returned with the counters final: no polling needed
        WorkerStats s = decode.stats();
        assertThat(s.failed()).isEqualTo(1);
        assertThat(s.aborted()).isZero();
        assertThat(s.running() + s.queued()).isZero();
        assertThat(onLoop(decode, () -> decode.listeners().get(0).connections())).isZero();
        assertThatThrownBy(() -> new Socket(decode.host(), port).close()).isInstanceOf(ConnectException.class);
        assertThat(p.get(5, TimeUnit.SECONDS).statusCode()).as("its prefill half had completed").isEqualTo(200);

        decode.restart();

        assertThat(decode.isRunning()).isTrue();
        assertThat(decode.port()).isEqualTo(port);
        ObjectNode again = pd("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":3}}", prefill, "after",
                nextRoom());
        CompletableFuture<HttpResponse<String>> p2 = client.post(prefill, "/generate", again);
        HttpResponse<String> d2 = new SimClient().postNow(decode, "/generate", again);
        assertThat(d2.statusCode()).isEqualTo(200);
        assertThat(json(d2.body()).get("text").asText()).isEqualTo(" t0 t1 t2");
        assertThat(p2.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(decode.stats().completed()).isEqualTo(1);
    }

    @Test
    void killingAPrefillStopsItsBootstrapTooAndRestartBindsBothPorts() throws Exception {
        int port = prefill.port();
        int bootstrapPort = prefill.bootstrapPort();
        long room = nextRoom();
        ObjectNode body = pd("{\"text\":\"" + "word ".repeat(4000) + "\"}", prefill, "long", room);
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, "/generate", body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode, "/generate", body);
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().running() == 1
                && onLoopTrue(prefill, () -> prefill.bootstrap().waiters(room) == 1))).isTrue();

        prefill.kill();

        WorkerStats s = prefill.stats();
        assertThat(s.failed()).isEqualTo(1);
        assertThat(s.running() + s.queued()).isZero();
        assertThatThrownBy(() -> p.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(IOException.class);
        HttpResponse<String> dr = d.get(5, TimeUnit.SECONDS);
        assertThat(dr.statusCode()).as("the decode fails at once, not after its KV wait").isEqualTo(500);
        assertThat(json(dr.body()).get("message").asText()).startsWith("Decode transfer failed for request")
                .contains("KVTransferError(bootstrap_room=" + room + ")").contains("closed before the KV arrived");
        assertThat(decode.stats().kvTransferFailures()).isEqualTo(1);
        assertThatThrownBy(() -> new Socket(prefill.host(), port).close()).isInstanceOf(ConnectException.class);
        assertThatThrownBy(() -> new Socket(prefill.host(), bootstrapPort).close())
                .isInstanceOf(ConnectException.class);

        prefill.restart();

        assertThat(prefill.isRunning()).isTrue();
        assertThat(prefill.port()).isEqualTo(port);
        assertThat(prefill.bootstrapPort()).isEqualTo(bootstrapPort);
        ObjectNode again = pd("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2}}", prefill, "back",
                nextRoom());
        SimClient fresh = new SimClient();
        CompletableFuture<HttpResponse<String>> p2 = fresh.post(prefill, "/generate", again);
        assertThat(fresh.postNow(decode, "/generate", again).statusCode()).isEqualTo(200);
        assertThat(p2.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(prefill.stats().completed()).isEqualTo(1);
    }

    @Test
    void killAndRestartAreIdempotentAndCanRunOnTheEventLoop() throws Exception {
        int port = decode.port();
        decode.loop.submit(decode::kill).get(5, TimeUnit.SECONDS); // on the loop: returns without waiting

        assertThat(decode.isRunning()).isFalse();
        assertThat(eventually(Duration.ofSeconds(5), () -> refused(decode.host(), port))).isTrue();
        decode.kill();
        assertThat(decode.isRunning()).isFalse();

        decode.loop.submit(decode::restart).get(5, TimeUnit.SECONDS);
        assertThat(eventually(Duration.ofSeconds(5), () -> !refused(decode.host(), port))).isTrue();
        decode.restart();
        assertThat(decode.isRunning()).isTrue();
        assertThat(new SimClient().get(decode, "/health").statusCode()).isEqualTo(200);

        decode.kill(); // left killed: the cluster must still close
        assertThat(refused(decode.host(), port)).isTrue();
    }

    private static boolean refused(String host, int port) {
        try (Socket s = new Socket(host, port)) {
            return false;
        } catch (ConnectException e) {
            return true;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
