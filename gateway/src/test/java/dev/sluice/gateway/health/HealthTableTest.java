package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The worker state machine on a hand-driven clock: every transition the issue names. */
class HealthTableTest {
    private long now = 1_000_000_000L;
    private final List<String> ejections = new ArrayList<>();

    private static HealthConfig config(int maxEjectedPercent) {
        return new HealthConfig(Duration.ofSeconds(2), Duration.ofSeconds(1), 2, 2, Duration.ofSeconds(10),
                Duration.ofSeconds(10), 0.9,
                new HealthConfig.Passive(Duration.ofSeconds(30), 3, 0.5, 10, Duration.ofSeconds(10),
                        Duration.ofSeconds(25), 2, maxEjectedPercent),
                new HealthConfig.Watchdog(3, Duration.ofSeconds(5), Duration.ofSeconds(3)),
                HealthConfig.StallPanic.DEFAULT);
    }

    private static WorkerSet workers(int prefill, int decode) {
        List<WorkerEndpoint> p = new ArrayList<>();
        List<WorkerEndpoint> d = new ArrayList<>();
        for (int i = 0; i < prefill; i++) {
            p.add(new WorkerEndpoint("http://10.0.0." + i + ":30000", "10.0.0." + i, 30000, 8998));
        }
        for (int i = 0; i < decode; i++) {
            d.add(new WorkerEndpoint("http://10.0.1." + i + ":30001", "10.0.1." + i, 30001, null));
        }
        return new WorkerSet(new WorkersConfig(p, d));
    }

    private HealthTable table(WorkerSet set, int maxEjectedPercent) {
        HealthTable t = new HealthTable(set, config(maxEjectedPercent), () -> now);
        t.addListener((w, from, to, cause) -> {
            if (cause != null) {
                ejections.add(w.name() + ":" + cause.label());
            }
        });
        for (Worker w : set.all()) {
            t.activeResult(w, FailureKind.ACTIVE_HEALTH, true, "");
        }
        return t;
    }

    private void advance(Duration d, HealthTable t) {
        now += d.toNanos();
        t.tick();
    }

    @Test
    void aWorkerIsOutUntilItsFirstPassingCheck() {
        WorkerSet set = workers(1, 1);
        HealthTable t = new HealthTable(set, config(100), () -> now);
        Worker d = set.decode().get(0);
        assertThat(d.state()).isEqualTo(WorkerState.EJECTED);
        assertThat(d.status().reason()).contains("first health check");
        assertThat(set.ready()).isFalse();
        t.activeResult(d, FailureKind.ACTIVE_HEALTH, true, "");
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
        assertThat(ejections).isEmpty(); // starting up is not an ejection
    }

    @Test
    void consecutiveFailuresEjectForAGrowingBackOffThenAHalfOpenTrialBringsItBack() {
        WorkerSet set = workers(1, 2);
        HealthTable t = table(set, 100);
        Worker d0 = set.decode().get(0);
        t.failure(d0, FailureKind.STALL, "no first token");
        t.failure(d0, FailureKind.STALL, "no first token");
        assertThat(d0.state()).isEqualTo(WorkerState.HEALTHY);
        t.failure(d0, FailureKind.STALL, "no first token");
        assertThat(d0.state()).isEqualTo(WorkerState.EJECTED);
        assertThat(d0.status().reason()).contains("3 consecutive failures").contains("stall");
        assertThat(ejections).containsExactly(d0.name() + ":stall");
        assertThat(d0.routable()).isFalse();

        advance(Duration.ofSeconds(9), t);
        assertThat(d0.state()).isEqualTo(WorkerState.EJECTED);
        advance(Duration.ofSeconds(1), t);
        assertThat(d0.state()).isEqualTo(WorkerState.HALF_OPEN);
        // two trial permits, then no more until their outcomes are known
        assertThat(d0.takeForNewRequest()).isTrue();
        assertThat(d0.takeForNewRequest()).isTrue();
        assertThat(d0.takeForNewRequest()).isFalse();
        assertThat(d0.routable()).isFalse();
        t.success(d0);
        assertThat(d0.state()).isEqualTo(WorkerState.HALF_OPEN);
        t.success(d0);
        assertThat(d0.state()).isEqualTo(WorkerState.HEALTHY);

        // the second ejection lasts twice as long
        for (int i = 0; i < 3; i++) {
            t.failure(d0, FailureKind.SERVER_ERROR, "500");
        }
        assertThat(d0.state()).isEqualTo(WorkerState.EJECTED);
        advance(Duration.ofSeconds(19), t);
        assertThat(d0.state()).isEqualTo(WorkerState.EJECTED);
        advance(Duration.ofSeconds(1), t);
        assertThat(d0.state()).isEqualTo(WorkerState.HALF_OPEN);
    }

    @Test
    void aFailedTrialEjectsAgainAndTheBackOffIsCapped() {
        WorkerSet set = workers(1, 2);
        HealthTable t = table(set, 100);
        Worker d0 = set.decode().get(0);
        for (int round = 1; round <= 4; round++) {
            for (int i = 0; i < 3 && d0.state() != WorkerState.EJECTED; i++) {
                t.failure(d0, FailureKind.KV_TRANSFER, "KVTransferError");
            }
            assertThat(d0.state()).isEqualTo(WorkerState.EJECTED);
            long expected = Math.min(10L * round, 25L);
            advance(Duration.ofSeconds(expected).minusMillis(1), t);
            assertThat(d0.state()).as("round %d", round).isEqualTo(WorkerState.EJECTED);
            advance(Duration.ofMillis(1), t);
            assertThat(d0.state()).as("round %d", round).isEqualTo(WorkerState.HALF_OPEN);
            t.failure(d0, FailureKind.KV_TRANSFER, "KVTransferError"); // one failed trial is enough
            assertThat(d0.state()).isEqualTo(WorkerState.EJECTED);
            advance(Duration.ofSeconds(Math.min(10L * (round + 1), 25L)), t);
            assertThat(d0.state()).isEqualTo(WorkerState.HALF_OPEN);
            t.success(d0);
            t.success(d0);
            assertThat(d0.state()).isEqualTo(WorkerState.HEALTHY);
            round++;
        }
        assertThat(ejections).allMatch(e -> e.endsWith(":kv_transfer"));
    }

    @Test
    void aFailureRatioOverTheWindowEjectsToo() {
        WorkerSet set = workers(2, 1);
        HealthTable t = table(set, 100);
        Worker p0 = set.prefill().get(0);
        for (int i = 0; i < 4; i++) {
            t.success(p0);
            t.failure(p0, FailureKind.SERVER_ERROR, "500");
        }
        assertThat(p0.state()).isEqualTo(WorkerState.HEALTHY); // 8 outcomes: below min_requests
        t.success(p0);
        t.failure(p0, FailureKind.SERVER_ERROR, "500");
        assertThat(p0.state()).isEqualTo(WorkerState.EJECTED);
        assertThat(p0.status().reason()).contains("failure ratio 0.50");
    }

    @Test
    void oldOutcomesLeaveTheWindow() {
        WorkerSet set = workers(2, 1);
        HealthTable t = table(set, 100);
        Worker p0 = set.prefill().get(0);
        t.failure(p0, FailureKind.SERVER_ERROR, "500");
        t.failure(p0, FailureKind.SERVER_ERROR, "500");
        advance(Duration.ofSeconds(31), t);
        t.failure(p0, FailureKind.SERVER_ERROR, "500"); // the first two are older than the 30 s window
        assertThat(p0.state()).isEqualTo(WorkerState.HEALTHY);
        t.failure(p0, FailureKind.SERVER_ERROR, "500");
        t.failure(p0, FailureKind.SERVER_ERROR, "500");
        assertThat(p0.state()).isEqualTo(WorkerState.EJECTED);
    }

    @Test
    void passiveSignalsNeverEjectTheLastAvailableWorkerOfARole() {
        WorkerSet set = workers(1, 1);
        HealthTable t = table(set, 100);
        Worker d = set.decode().get(0);
        for (int i = 0; i < 20; i++) {
            t.failure(d, FailureKind.STALL, "stalled");
        }
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
        assertThat(ejections).isEmpty();
        // an active check that fails is another matter: a dead worker is dead
        t.activeResult(d, FailureKind.ACTIVE_GENERATE, false, "timeout");
        t.activeResult(d, FailureKind.ACTIVE_GENERATE, false, "timeout");
        assertThat(d.state()).isEqualTo(WorkerState.EJECTED);
        assertThat(set.ready()).isFalse();
        assertThat(ejections).containsExactly(d.name() + ":active_generate");
    }

    @Test
    void maxEjectedPercentBoundsTheShareOfARole() {
        WorkerSet set = workers(1, 4);
        HealthTable t = table(set, 50);
        for (Worker d : set.decode()) {
            for (int i = 0; i < 3; i++) {
                t.failure(d, FailureKind.CONNECT, "refused");
            }
        }
        assertThat(set.decode().stream().filter(w -> w.state() == WorkerState.EJECTED).count()).isEqualTo(2);
    }

    @Test
    void aStuckSchedulerStaysOutWhileHealthPassesUntilHealthGeneratePassesAgain() {
        WorkerSet set = workers(1, 2);
        HealthTable t = table(set, 100);
        Worker d = set.decode().get(0);
        t.activeResult(d, FailureKind.ACTIVE_GENERATE, false, "timeout after 10000 ms");
        t.activeResult(d, FailureKind.ACTIVE_GENERATE, false, "timeout after 10000 ms");
        assertThat(d.state()).isEqualTo(WorkerState.EJECTED);
        assertThat(d.status().reason()).contains("GET /health_generate failed 2 times");
        for (int i = 0; i < 5; i++) {
            t.activeResult(d, FailureKind.ACTIVE_HEALTH, true, "");
        }
        assertThat(d.state()).isEqualTo(WorkerState.EJECTED);
        t.activeResult(d, FailureKind.ACTIVE_GENERATE, true, "");
        assertThat(d.state()).isEqualTo(WorkerState.EJECTED);
        t.activeResult(d, FailureKind.ACTIVE_GENERATE, true, "");
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
    }

    @Test
    void aDecodeWithAFullKvCacheIsDegradedUntilItDrops() {
        WorkerSet set = workers(1, 1);
        HealthTable t = table(set, 100);
        Worker d = set.decode().get(0);
        Worker p = set.prefill().get(0);
        t.telemetry(d, 0.95);
        assertThat(d.state()).isEqualTo(WorkerState.DEGRADED);
        assertThat(d.status().reason()).contains("KV token usage 0.950");
        assertThat(d.routable()).isFalse();
        assertThat(d.isAvailable()).isTrue(); // requests queue for it rather than being refused
        assertThat(set.ready()).isTrue();
        t.telemetry(d, Double.NaN); // stale: unknown is not full
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
        t.telemetry(d, 0.95);
        t.telemetry(d, 0.5);
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
        t.telemetry(p, 0.99); // a prefill's KV usage is not a reason to stop sending it prompts
        assertThat(p.state()).isEqualTo(WorkerState.HEALTHY);
    }

    @Test
    void drainingWinsOverEverything() {
        WorkerSet set = workers(1, 2);
        HealthTable t = table(set, 100);
        Worker d = set.decode().get(1);
        t.draining(d, true);
        assertThat(d.state()).isEqualTo(WorkerState.DRAINING);
        assertThat(d.routable()).isFalse();
        assertThat(d.isAvailable()).isFalse();
    }

    // ---- the panic mode (health.stall_panic) ----

    @Test
    void aConfirmedStallOnTheLastDecodeMakesItSuspectAndTakesNoClientRequest() {
        WorkerSet set = workers(1, 1);
        HealthTable t = table(set, 100);
        Worker d = set.decode().get(0);
        t.stalled(d, "decode stalled");
        assertThat(d.state()).as("one stall alone is not confirmed").isEqualTo(WorkerState.HEALTHY);
        t.progressed(d);
        t.stalled(d, "decode stalled");
        assertThat(d.state()).as("progress in between: still one stall in a row").isEqualTo(WorkerState.HEALTHY);
        t.stalled(d, "decode stalled again");
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);
        assertThat(d.isAvailable()).as("no capacity: readiness 503").isFalse();
        assertThat(d.acceptsNewRequests()).as("no client request is the probe").isFalse();
        assertThat(d.routable()).isFalse();
        assertThat(d.takeForNewRequest()).isFalse();
        assertThat(d.suspectProbe()).as("the gateway's own probe is scheduled").isPresent();
        assertThat(d.suspectProbe().get().nextNanos() - now).as("first probe: one probe_interval (1 s) less jitter")
                .isBetween(800_000_000L, 1_000_000_000L);
        assertThat(d.status().reason()).contains("no client request goes to it");
        t.stalled(d, "another stall");
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);
        t.progressed(d);
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
        assertThat(d.suspectProbe()).isEmpty();
        assertThat(ejections).isEmpty();
    }

    @Test
    void turningStallPanicOffByAReloadPutsASuspectBackInRotation() {
        WorkerSet set = workers(1, 1);
        HealthTable t = table(set, 100);
        Worker d = set.decode().get(0);
        t.stalled(d, "x");
        t.stalled(d, "x");
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);
        t.reconfigure(config(100).toBuilder().stallPanic(HealthConfig.StallPanic.DEFAULT.withEnabled(false)).build());
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
        assertThat(d.suspectProbe()).isEmpty();
    }

    @Test
    void aRoleWithAnotherWorkerRoutesAroundAStallInsteadOfPanicking() {
        WorkerSet set = workers(1, 2);
        HealthTable t = table(set, 100);
        Worker d = set.decode().get(0);
        for (int i = 0; i < 4; i++) {
            t.stalled(d, "decode stalled");
        }
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
    }

    @Test
    void withStallPanicOffTheLastWorkerStaysInRotation() {
        WorkerSet set = workers(1, 1);
        HealthConfig off = config(100).toBuilder()
                .stallPanic(HealthConfig.StallPanic.DEFAULT.withEnabled(false)).build();
        HealthTable t = new HealthTable(set, off, () -> now);
        for (Worker w : set.all()) {
            t.activeResult(w, FailureKind.ACTIVE_HEALTH, true, "");
        }
        Worker d = set.decode().get(0);
        for (int i = 0; i < 4; i++) {
            t.stalled(d, "decode stalled");
        }
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
    }
}
