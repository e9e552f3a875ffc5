package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.gateway.upstream.UpstreamPool;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import dev.sluice.testbed.testing.Poll;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The active checker against real simulated workers on loopback ports: {@code /health} failures eject
 * after the unhealthy threshold and passes restore after the healthy one, a suspicion runs a
 * {@code /health_generate} at once whose failure ejects, the periodic {@code /health_generate} path,
 * and a vLLM worker without that route.
 */
class HealthCheckerTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final int UNHEALTHY = 2;
    private static final int HEALTHY = 2;
    private final Transport transport = Transport.best();
    private SimCluster cluster;
    private EventLoopGroup group;
    private HealthChecker checker;
    private HealthTable table;
    private WorkerSet workers;
    private SimWorker prefillSim;
    private SimWorker decodeSim;
    /** Every state change the table announced: "host:port STATE", with the time it was heard. */
    private final List<Change> changes = new CopyOnWriteArrayList<>();

    private record Change(String worker, WorkerState to, long nanos) {
    }

    @AfterEach
    void stop() {
        if (checker != null) {
            checker.close();
        }
        if (group != null) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    /**
     * One prefill and one decode; {@code /health} answers at once (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0),
     * {@code /health_generate} still generates and gives up with 503 after one second.
     */
    private void start(SimMode mode, Duration interval, Duration generateInterval) throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false)
                .withHealthCheckTimeout(Duration.ofSeconds(1)), mode);
        prefillSim = mode == SimMode.VLLM ? cluster.vllmPrefills().get(0) : cluster.prefills().get(0);
        decodeSim = mode == SimMode.VLLM ? cluster.vllmDecodes().get(0) : cluster.decodes().get(0);
        Integer bootstrap = prefillSim instanceof PrefillServer p ? p.bootstrapPort() : null;
        workers = new WorkerSet(new WorkersConfig(List.of(endpoint(prefillSim, bootstrap)),
                List.of(endpoint(decodeSim, null))));
        HealthConfig config = new HealthConfig(interval, Duration.ofSeconds(3), UNHEALTHY, HEALTHY, generateInterval,
                Duration.ofSeconds(5), 0.9,
                new HealthConfig.Passive(Duration.ofSeconds(30), 3, 0.5, 10, Duration.ofSeconds(10),
                        Duration.ofSeconds(25), 2, 100),
                new HealthConfig.Watchdog(3, Duration.ofSeconds(5), Duration.ofSeconds(3)),
                HealthConfig.StallPanic.DEFAULT);
        table = new HealthTable(workers, config, System::nanoTime);
        table.addListener((w, from, to, cause) -> changes.add(new Change(w.name(), to.state(), System.nanoTime())));
        group = transport.newGroup(1, "health-test");
        EventLoop loop = (EventLoop) group.next();
        UpstreamPool pool = new UpstreamPool(transport, Duration.ofSeconds(2), 4, Duration.ofSeconds(60));
        checker = new HealthChecker(workers, pool, loop, table, new BackgroundTasks(new SimpleMeterRegistry()));
        checker.start();
        assertThat(Poll.eventually(WAIT, () -> prefill().state() == WorkerState.HEALTHY
                && decode().state() == WorkerState.HEALTHY)).as("both pass their first check").isTrue();
    }

    private static WorkerEndpoint endpoint(SimWorker sim, Integer bootstrapPort) {
        return new WorkerEndpoint(sim.url(), sim.host(), sim.port(), bootstrapPort);
    }

    private Worker prefill() {
        return workers.prefill().get(0);
    }

    private Worker decode() {
        return workers.decode().get(0);
    }

    /** Requests for {@code path} the worker received in (from, to]. */
    private static long received(SimWorker sim, String path, long from, long to) {
        return sim.journal().stream().filter(r -> r.path().equals(path))
                .filter(r -> r.receivedNanos() - from > 0 && r.receivedNanos() - to <= 0).count();
    }

    private static long received(SimWorker sim, String path) {
        return sim.journal().stream().filter(r -> r.path().equals(path)).count();
    }

    private List<Change> decodeChanges() {
        return changes.stream().filter(c -> c.worker().equals(decode().name())).toList();
    }

    /**
     * Waits until the listener heard the decode's {@code n}-th change of state (1-based) and returns it.
     * The listener, not {@link Worker#state()}: the table publishes the state before it announces it.
     */
    private Change awaitDecodeChange(int n) throws InterruptedException {
        assertThat(Poll.eventually(WAIT, () -> decodeChanges().size() >= n)).as("decode change #" + n).isTrue();
        return decodeChanges().get(n - 1);
    }

    @Test
    void failingHealthEjectsAfterTheUnhealthyThresholdAndPassingAgainRestores() throws Exception {
        start(SimMode.SGLANG, Duration.ofMillis(100), Duration.ZERO);

        decodeSim.faults().setHealthStatus(503);
        long failingFrom = System.nanoTime(); // every /health received from now on answers 503

        Change ejected = awaitDecodeChange(2);
        assertThat(ejected.to()).isEqualTo(WorkerState.EJECTED);
        assertThat(decode().status().reason()).isEqualTo(
                "active check: GET /health failed " + UNHEALTHY + " times in a row: status 503");
        assertThat(received(decodeSim, "/health", failingFrom, ejected.nanos()))
                .as("not out on the first failure").isGreaterThanOrEqualTo(UNHEALTHY);
        assertThat(prefill().state()).isEqualTo(WorkerState.HEALTHY);

        decodeSim.faults().reset();
        long passingFrom = System.nanoTime();

        Change restored = awaitDecodeChange(3);
        assertThat(restored.to()).isEqualTo(WorkerState.HEALTHY);
        assertThat(received(decodeSim, "/health", passingFrom, restored.nanos()))
                .as("back after the healthy threshold of passes").isGreaterThanOrEqualTo(HEALTHY);
        assertThat(decodeChanges()).extracting(Change::to)
                .containsExactly(WorkerState.HEALTHY, WorkerState.EJECTED, WorkerState.HEALTHY);
        assertThat(changes).filteredOn(c -> c.worker().equals(prefill().name())).extracting(Change::to)
                .containsExactly(WorkerState.HEALTHY);
    }

    @Test
    void aSuspicionChecksAtOnceAndAFailedConfirmationEjectsWithoutAStreak() throws Exception {
        // /health runs once at start, then not for a minute; no periodic /health_generate at all
        start(SimMode.SGLANG, Duration.ofMinutes(1), Duration.ZERO);
        decodeSim.faults().setFailStatus(503); // /health still passes; a generation fails at once
        assertThat(received(decodeSim, "/health_generate")).isZero();

        table.suspect(decode());

        assertThat(Poll.eventually(WAIT, () -> decode().state() == WorkerState.EJECTED)).isTrue();
        assertThat(decode().status().reason()).isEqualTo(
                "active check: GET /health_generate failed while a request suspected it of stalling: status 503");
        assertThat(received(decodeSim, "/health_generate")).as("one confirming check was enough").isEqualTo(1);
        assertThat(received(prefillSim, "/health_generate")).as("only the suspect is checked").isZero();
        assertThat(prefill().state()).isEqualTo(WorkerState.HEALTHY);
    }

    @Test
    void healthGenerateFailuresEjectWhileHealthPassesAndItsRecoveryRestores() throws Exception {
        start(SimMode.SGLANG, Duration.ofMillis(200), Duration.ofMillis(300));
        // a hung scheduler behind a live HTTP server: /health 200, /health_generate 503 after its timeout
        decodeSim.faults().setStallAll(true);

        assertThat(Poll.eventually(WAIT, () -> decode().state() == WorkerState.EJECTED)).isTrue();
        assertThat(decode().status().reason()).isEqualTo(
                "active check: GET /health_generate failed " + UNHEALTHY + " times in a row: status 503");
        assertThat(prefill().state()).isEqualTo(WorkerState.HEALTHY);

        long generateChecks = received(decodeSim, "/health_generate");
        decodeSim.faults().reset();

        assertThat(awaitDecodeChange(3).to()).isEqualTo(WorkerState.HEALTHY);
        assertThat(received(decodeSim, "/health_generate")).as("re-checked until it passed")
                .isGreaterThan(generateChecks);
        assertThat(decodeChanges()).extracting(Change::to)
                .containsExactly(WorkerState.HEALTHY, WorkerState.EJECTED, WorkerState.HEALTHY);
    }

    @Test
    void aVllmWorkerWithoutHealthGenerateIsCheckedWithHealthOnly() throws Exception {
        start(SimMode.VLLM, Duration.ofMillis(100), Duration.ofMillis(200));
        assertThat(Poll.eventually(WAIT, () -> received(decodeSim, "/health_generate") >= 1)).isTrue();
        long generateProbes = received(decodeSim, "/health_generate");
        long healthChecks = received(decodeSim, "/health");

        assertThat(Poll.eventually(WAIT, () -> received(decodeSim, "/health") >= healthChecks + 5)).isTrue();

        assertThat(received(decodeSim, "/health_generate")).as("the 404 is remembered: no more probes")
                .isEqualTo(generateProbes);
        assertThat(decode().state()).as("a 404 there is not a failure").isEqualTo(WorkerState.HEALTHY);
        assertThat(prefill().state()).isEqualTo(WorkerState.HEALTHY);
    }
}
