package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.staticbackend.StaticBackend;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway's own code throwing while a half handles a worker's answer, through a real
 * {@code UpstreamCall} against a loopback worker (so that the call's catch, not a test shortcut,
 * hands it to the half): the half reports an internal error, and no worker is ever blamed for it
 * (no failure with a culprit, no connection reset counted against it).
 */
class InternalErrorTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private AttemptHarness h;
    private SimCluster cluster;
    private StaticBackend backend;
    private Worker prefill;
    private Worker decode;
    private SglangAttempt at;

    @AfterEach
    void tearDown() throws Exception {
        try {
            if (at != null) {
                // what the exchange does on an internal error: stop the attempt
                h.onLoop(() -> at.stop(AbortCause.INTERNAL_ERROR));
                assertThat(PdTestbed.eventually(WAIT, () -> prefill.inflight() == 0 && decode.inflight() == 0))
                        .as("in-flight counts back to zero").isTrue();
            }
            h.close();
        } finally {
            if (cluster != null) {
                cluster.close();
            }
            if (backend != null) {
                backend.close();
            }
        }
    }

    private void assertNoWorkerBlamed() {
        assertThat(h.events.calls()).filteredOn(c -> c.name().startsWith("failed"))
                .as("a failure reported for the gateway's own bug").isEmpty();
        double resets = h.metrics.registry().find("sluice.upstream.errors").counters().stream()
                .mapToDouble(c -> c.count()).sum();
        assertThat(resets).as("upstream errors counted").isZero();
    }

    private Throwable theInternalError() throws InterruptedException {
        assertThat(PdTestbed.eventually(WAIT, () -> h.events.count("internalError") > 0)).isTrue();
        assertThat(h.events.count("internalError")).isEqualTo(1);
        return (Throwable) h.events.named("internalError").get(0).arg();
    }

    @Test
    void aThrowWhileRelayingTheDecodesStreamIsAnInternalErrorAndTheDecodeIsAborted() throws Exception {
        h = AttemptHarness.live();
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false), SimMode.SGLANG);
        PrefillServer p = cluster.prefills().get(0);
        DecodeServer d = cluster.decodes().get(0);
        prefill = AttemptHarness.worker(WorkerRole.PREFILL, p.port(), p.bootstrapPort());
        decode = AttemptHarness.worker(WorkerRole.DECODE, d.port(), null);
        h.events.throwOnRelayed = new IllegalStateException("a bug in the exchange's relayed()");
        at = new SglangAttempt(h.scope(GenerationRoute.GENERATE, "{\"text\":\"hello\",\"stream\":true,"
                + "\"sampling_params\":{\"max_new_tokens\":200}}"), new AttemptKey("ie-rid", prefill, decode));
        assertThat(h.onLoop(at::send)).isTrue();

        assertThat(theInternalError()).hasMessageContaining("relayed()");
        // the call closed the connection in an unknown state; the worker may still run the request: told to abort
        assertThat(PdTestbed.eventually(WAIT, () -> !d.aborts().isEmpty())).isTrue();
        assertThat(h.onLoop(() -> at.decodeHalf().done())).isTrue();
        assertThat(decode.inflight()).isZero();
        assertNoWorkerBlamed();
    }

    @Test
    void aThrowWhileCreditingThePrefillIsAnInternalErrorNotThePrefillsFailure() throws Exception {
        h = AttemptHarness.live();
        backend = StaticBackend.start(new StaticBackend.Options("127.0.0.1", 0, false, Duration.ZERO));
        // one static server as both halves: it answers any POST with the same whole chat completion
        prefill = AttemptHarness.worker(WorkerRole.PREFILL, backend.port(), 8998);
        decode = AttemptHarness.worker(WorkerRole.DECODE, backend.port(), null);
        h.events.throwOnPrefillSucceeded = new IllegalStateException("a bug in the exchange's prefillSucceeded()");
        at = new SglangAttempt(h.scope(GenerationRoute.GENERATE, "{\"text\":\"hello\"}"), new AttemptKey("ie-rid-2", prefill, decode));
        assertThat(h.onLoop(at::send)).isTrue();

        assertThat(theInternalError()).hasMessageContaining("prefillSucceeded()");
        assertThat(PdTestbed.eventually(WAIT, () -> h.events.ended() != null)).isTrue();
        assertThat(h.events.ended()).as("the decode's answer is unaffected").isEqualTo("clean");
        assertThat(h.onLoop(() -> h.received().status)).isEqualTo(200);
        assertNoWorkerBlamed();
    }
}
