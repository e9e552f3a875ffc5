package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.AbortRecord;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Stopping an SGLang attempt against real simulated workers on loopback: the order of the aborts
 * (decode first, the prefill only once the decode dropped the request, or after
 * {@link SglangAttempt#DECODE_ACK_WAIT_MS}), and the aborts a client's disconnect sends for a half
 * that already answered. The workers' abort journals say what they were told, and when.
 */
class SglangAttemptStopTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final String RID = "stop-rid";

    private AttemptHarness h;
    private SimCluster cluster;
    private BlackHole blackHole;
    private Worker prefill;
    private Worker decode;
    private SglangAttempt at;

    @AfterEach
    void tearDown() throws Exception {
        try {
            if (at != null) {
                h.onLoop(() -> at.stop(AbortCause.DRAIN)); // a no-op for an attempt the test already stopped
                await("the attempt is done", () -> onLoopQuietly(at::done));
                assertThat(prefill.inflight()).isZero();
                assertThat(decode.inflight()).isZero();
            }
            h.close();
        } finally {
            if (cluster != null) {
                cluster.close();
            }
            if (blackHole != null) {
                blackHole.close();
            }
        }
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        assertThat(PdTestbed.eventually(WAIT, condition)).as(what).isTrue();
    }

    private boolean onLoopQuietly(java.util.concurrent.Callable<Boolean> c) {
        try {
            return h.onLoop(c);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private void startCluster(SimConfig cfg) throws Exception {
        h = AttemptHarness.live();
        cluster = SimCluster.start(1, 1, 0, cfg.withHealthGeneration(false), SimMode.SGLANG);
        PrefillServer p = cluster.prefills().get(0);
        prefill = AttemptHarness.worker(WorkerRole.PREFILL, p.port(), p.bootstrapPort());
        decode = AttemptHarness.worker(WorkerRole.DECODE, cluster.decodes().get(0).port(), null);
    }

    private void send(String json) throws Exception {
        at = new SglangAttempt(h.scope(GenerationRoute.GENERATE, json), new AttemptKey(RID, prefill, decode));
        assertThat(h.onLoop(at::send)).isTrue();
    }

    private static boolean holds(List<?> journal) {
        return !journal.isEmpty();
    }

    private static AbortRecord abortOf(List<AbortRecord> aborts) {
        assertThat(aborts).extracting(AbortRecord::rid).containsExactly(RID);
        return aborts.get(0);
    }

    @Test
    void theDecodeIsAbortedFirstAndThePrefillOnlyAfterTheDecodeAcknowledged() throws Exception {
        // a prefill that never finishes: both halves are running on their workers when the attempt is stopped
        startCluster(SimConfig.defaults().withPrefillTokensPerSecond(1));
        PrefillServer p = cluster.prefills().get(0);
        DecodeServer d = cluster.decodes().get(0);
        send("{\"text\":\"a prompt of a few tokens\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":4}}");
        await("both workers hold the request", () -> holds(p.journal()) && holds(d.journal()));

        boolean doneAtOnce = h.onLoop(() -> {
            at.stop(AbortCause.TIMEOUT);
            return at.done();
        });
        assertThat(doneAtOnce).as("not done while the prefill waits for the decode's acknowledgement").isFalse();
        await("the prefill was aborted", () -> holds(p.aborts()));
        AbortRecord decodeAbort = abortOf(d.aborts());
        AbortRecord prefillAbort = abortOf(p.aborts());
        assertThat(prefillAbort.receivedNanos()).as("the prefill's abort came after the decode's")
                .isGreaterThan(decodeAbort.receivedNanos());
        await("the attempt is done", () -> onLoopQuietly(at::done));
        // the stop reported no failure: that is the exchange's to decide; it hears only that the part ended
        assertThat(h.events.names()).doesNotContain("failed", "failedAfterCommit", "prefillSucceeded")
                .contains("partEnded");
    }

    @Test
    void withoutTheDecodesAcknowledgementThePrefillIsAbortedAfterTheWait() throws Exception {
        h = AttemptHarness.live();
        cluster = SimCluster.start(1, 0, 0, SimConfig.defaults().withPrefillTokensPerSecond(1)
                .withHealthGeneration(false), SimMode.SGLANG);
        PrefillServer p = cluster.prefills().get(0);
        prefill = AttemptHarness.worker(WorkerRole.PREFILL, p.port(), p.bootstrapPort());
        blackHole = new BlackHole(); // a decode that takes every request and never answers, its aborts included
        decode = AttemptHarness.worker(WorkerRole.DECODE, blackHole.port(), null);
        send("{\"text\":\"a prompt of a few tokens\",\"stream\":true}");
        await("both workers hold the request", () -> holds(p.journal()) && blackHole.saw("POST /generate"));

        long stopped = h.onLoop(() -> {
            long now = System.nanoTime();
            at.stop(AbortCause.TIMEOUT);
            return now;
        });
        await("the prefill was aborted", () -> holds(p.aborts()));
        assertThat(blackHole.saw("POST /abort_request")).as("the decode was told first").isTrue();
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(abortOf(p.aborts()).receivedNanos() - stopped);
        // the timer cannot fire early; the upper bound is the abort timeout (5 s) the unanswered decode abort
        // would otherwise have been waited for
        assertThat(waitedMs).isGreaterThanOrEqualTo(SglangAttempt.DECODE_ACK_WAIT_MS).isLessThan(4_000);
        await("the attempt is done", () -> onLoopQuietly(at::done));
    }

    private void startStreamingPastThePrefill() throws Exception {
        // a fast prefill and a slow decode: the prefill has answered while the decode still streams
        startCluster(SimConfig.defaults().withDecodeStep(Duration.ofMillis(100)));
        send("{\"text\":\"hello\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":1000}}");
        await("the prefill answered and the first token came", () -> h.events.count("prefillSucceeded") == 1
                && h.events.count("firstToken") == 1);
        assertThat(h.onLoop(at::prefillDone)).isTrue();
    }

    @Test
    void aClientDisconnectAbortsBothHalvesEvenOneThatAlreadyAnswered() throws Exception {
        startStreamingPastThePrefill();
        PrefillServer p = cluster.prefills().get(0);
        DecodeServer d = cluster.decodes().get(0);
        h.onLoop(() -> at.stop(AbortCause.CLIENT_DISCONNECT));
        await("both workers were told", () -> holds(d.aborts()) && holds(p.aborts()));
        // (whether the rid was still live is the simulator's business: the closed connection may already have
        // aborted it, as a real server does; what counts is that each worker was told)
        abortOf(d.aborts());
        abortOf(p.aborts()); // the prefill may still hold KV for the room: an abort of a finished rid is a no-op
        await("the attempt is done", () -> onLoopQuietly(at::done));
    }

    @Test
    void anyOtherStopLeavesAHalfThatAlreadyAnsweredAlone() throws Exception {
        startStreamingPastThePrefill();
        PrefillServer p = cluster.prefills().get(0);
        DecodeServer d = cluster.decodes().get(0);
        h.onLoop(() -> at.stop(AbortCause.TIMEOUT));
        await("the decode was told", () -> holds(d.aborts()));
        await("the attempt is done", () -> onLoopQuietly(at::done));
        // the prefill's fate was decided in stop() itself (it had ended: nothing to send); by now any abort
        // to it would have been sent, as the decode's acknowledgement came
        await("the decode's abort was answered", () -> h.metrics.registry().find("sluice.abort.requests.sent")
                .tag("role", "decode").counters().stream().mapToDouble(c -> c.count()).sum() == 1);
        assertThat(p.aborts()).isEmpty();
    }

    /** A TCP server that reads every connection and never answers: a worker whose aborts are never acknowledged. */
    private static final class BlackHole implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();
        private final StringBuffer seen = new StringBuffer();
        private final Thread acceptor;

        BlackHole() throws IOException {
            acceptor = new Thread(this::accept, "black-hole");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.getLocalPort();
        }

        boolean saw(String text) {
            return seen.indexOf(text) >= 0;
        }

        private void accept() {
            try {
                while (true) {
                    Socket s = server.accept();
                    sockets.add(s);
                    Thread reader = new Thread(() -> read(s), "black-hole-reader");
                    reader.setDaemon(true);
                    reader.start();
                }
            } catch (IOException closed) {
                // the test is over
            }
        }

        private void read(Socket s) {
            byte[] buf = new byte[4096];
            try (InputStream in = s.getInputStream()) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    seen.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                }
            } catch (IOException closed) {
                // the peer closed, or the test is over
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : sockets) {
                s.close();
            }
        }
    }
}
