package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.routing.SuspectProbe;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.DefaultEventLoop;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The panic mode's probes on a hand-driven clock, against a fake sender: the gateway's own probe
 * of a suspect pair, one at a time, spaced by the back-off; a success puts the pair back; clients
 * never take part.
 */
class StallProbesTest {
    private static final long SECOND = 1_000_000_000L;
    private long now = 1_000 * SECOND;
    private final DefaultEventLoop loop = new DefaultEventLoop();
    private final List<Sent> sent = new ArrayList<>();
    private final List<String> results = new ArrayList<>();

    private record Sent(HealthTable.ProbePair pair, Duration timeout, StallProbes.Verdict done, long at) {
    }

    @AfterEach
    void close() {
        loop.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS);
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

    private HealthTable table(WorkerSet set) {
        HealthConfig config = HealthConfig.builder().interval(Duration.ofSeconds(2)).timeout(Duration.ofSeconds(1))
                .unhealthyThreshold(2).healthyThreshold(2).generateInterval(Duration.ofSeconds(10))
                .generateTimeout(Duration.ofSeconds(10)).decodeMaxKvUsage(0.9)
                .passive(HealthConfig.Passive.builder().window(Duration.ofSeconds(30)).consecutiveFailures(3)
                        .failureRatio(0.5).minRequests(10).baseEjection(Duration.ofSeconds(10))
                        .maxEjection(Duration.ofSeconds(25)).halfOpenRequests(2).maxEjectedPercent(100).build())
                .watchdog(new HealthConfig.Watchdog(3, Duration.ofSeconds(5), Duration.ofSeconds(3)))
                .stallPanic(HealthConfig.StallPanic.DEFAULT).build();
        HealthTable t = new HealthTable(set, config, () -> now, () -> 0.0); // no jitter: the full back-off
        for (Worker w : set.all()) {
            t.activeResult(w, FailureKind.ACTIVE_HEALTH, true, "");
        }
        return t;
    }

    private StallProbes probes(HealthTable t) {
        return new StallProbes(t, (pair, timeout, done) -> sent.add(new Sent(pair, timeout, done, now)), loop,
                new BackgroundTasks(new SimpleMeterRegistry()), (w, o) -> results.add(w.name() + ":" + o.label()));
    }

    private static void stallTwice(HealthTable t, Worker... ws) {
        for (int i = 0; i < HealthTable.STALLS_TO_CONFIRM; i++) {
            for (Worker w : ws) {
                t.stalled(w, "stalled");
            }
        }
    }

    /** Runs probe rounds every 50 ms for {@code d}, as the periodic task would. */
    private void run(StallProbes probes, Duration d) {
        long end = now + d.toNanos();
        while (now < end) {
            now += StallProbes.ROUND_MS * 1_000_000L;
            probes.round();
        }
    }

    @Test
    void theSuspectPairIsProbedByTheGatewayOneProbeAtATimeAndHealsOnTheFirstSuccess() {
        WorkerSet set = workers(1, 1);
        HealthTable t = table(set);
        StallProbes probes = probes(t);
        Worker p = set.prefill().get(0);
        Worker d = set.decode().get(0);
        long verdict = now;
        stallTwice(t, p, d);
        assertThat(p.state()).isEqualTo(WorkerState.SUSPECT);
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);

        run(probes, Duration.ofMillis(900));
        assertThat(sent).as("nothing before probe_interval").isEmpty();
        run(probes, Duration.ofMillis(200));
        assertThat(sent).hasSize(1);
        Sent first = sent.get(0);
        assertThat(first.pair()).as("one probe through both suspects").isEqualTo(new HealthTable.ProbePair(p, d));
        assertThat(first.at() - verdict).isBetween(SECOND, SECOND + 50_000_000L);
        assertThat(first.timeout()).isEqualTo(Duration.ofSeconds(3));
        SuspectProbe running = d.suspectProbe().orElseThrow();
        assertThat(running.running()).isTrue();
        assertThat(running.verdictNanos()).as("the verdict is due by the timeout").isEqualTo(first.at() + 3 * SECOND);
        assertThat(running.nextNanos()).as("should it fail, the next starts at its verdict (the 2 s step is shorter)")
                .isEqualTo(first.at() + 3 * SECOND);
        assertThat(running.retryAfterSeconds(first.at())).isEqualTo(3);
        assertThat(d.acceptsNewRequests()).as("never a client's request").isFalse();

        run(probes, Duration.ofSeconds(5));
        assertThat(sent).as("one at a time: the first has no verdict yet").hasSize(1);
        first.done().ended(ProbeOutcome.TIMEOUT, "no answer");
        assertThat(results).containsExactlyInAnyOrder(p.name() + ":timeout", d.name() + ":timeout");
        SuspectProbe next = d.suspectProbe().orElseThrow();
        assertThat(next.failed()).isEqualTo(1);
        assertThat(next.nextNanos()).as("2 s after the first's start has passed: at once").isEqualTo(now);
        assertThat(p.state()).isEqualTo(WorkerState.SUSPECT);

        run(probes, Duration.ofMillis(50));
        assertThat(sent).hasSize(2);
        sent.get(1).done().ended(ProbeOutcome.SUCCESS, "answered 200");
        assertThat(p.state()).isEqualTo(WorkerState.HEALTHY);
        assertThat(d.state()).isEqualTo(WorkerState.HEALTHY);
        assertThat(d.suspectProbe()).isEmpty();
        assertThat(d.acceptsNewRequests()).isTrue();
        run(probes, Duration.ofSeconds(20));
        assertThat(sent).as("healthy: no more probes").hasSize(2);
    }

    @Test
    void probesThatFailFastAreSpacedByTheDoublingBackOffUpToTheCap() {
        WorkerSet set = workers(1, 1);
        HealthTable t = table(set);
        StallProbes probes = probes(t);
        Worker d = set.decode().get(0);
        stallTwice(t, set.prefill().get(0), d);
        for (int i = 0; i < 7; i++) {
            int before = sent.size();
            run(probes, Duration.ofMillis(50));
            while (sent.size() == before) {
                run(probes, Duration.ofMillis(50));
            }
            sent.get(sent.size() - 1).done().ended(ProbeOutcome.FAILED, "status 500");
        }
        List<Long> gaps = new ArrayList<>();
        for (int i = 1; i < sent.size(); i++) {
            gaps.add((sent.get(i).at() - sent.get(i - 1).at()) / 1_000_000);
        }
        // start to start: 2, 4, 8, then capped at 10 s (each within one 50 ms round of its due time); while
        // each ran, clients were told the un-jittered next start: never before the real one
        assertThat(d.suspectProbe().orElseThrow().running()).isFalse();
        assertThat(gaps).hasSize(6);
        long[] want = {2000, 4000, 8000, 10000, 10000, 10000};
        for (int i = 0; i < want.length; i++) {
            assertThat(gaps.get(i)).as("gap %d", i).isBetween(want[i], want[i] + 50);
        }
        assertThat(d.suspectProbe().orElseThrow().failed()).isEqualTo(7);
    }

    @Test
    void aSuspectDecodeIsProbedWithAHealthyPrefillWhichStaysHealthy() {
        WorkerSet set = workers(2, 1);
        HealthTable t = table(set);
        StallProbes probes = probes(t);
        Worker d = set.decode().get(0);
        stallTwice(t, d);
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);
        run(probes, Duration.ofMillis(1100));
        assertThat(sent).hasSize(1);
        HealthTable.ProbePair pair = sent.get(0).pair();
        assertThat(pair.decode()).isEqualTo(d);
        assertThat(pair.prefill().state()).isEqualTo(WorkerState.HEALTHY);
        sent.get(0).done().ended(ProbeOutcome.FAILED, "decode answered 500");
        assertThat(results).as("counted for the suspect only").containsExactly(d.name() + ":failed");
        assertThat(pair.prefill().state()).isEqualTo(WorkerState.HEALTHY);
    }

    @Test
    void aSenderThatThrowsCountsAsAFailedProbe() {
        WorkerSet set = workers(1, 1);
        HealthTable t = table(set);
        StallProbes probes = new StallProbes(t, (pair, timeout, done) -> {
            throw new IllegalStateException("no connection");
        }, loop, new BackgroundTasks(new SimpleMeterRegistry()), (w, o) -> results.add(w.name() + ":" + o.label()));
        stallTwice(t, set.prefill().get(0), set.decode().get(0));
        run(probes, Duration.ofMillis(1100));
        assertThat(results).hasSize(2).allMatch(r -> r.endsWith(":failed"));
        assertThat(set.decode().get(0).suspectProbe().orElseThrow().running()).isFalse();
    }

    @Test
    void aSuspectUnifiedWorkerIsProbedAlone() {
        WorkerSet set = new WorkerSet(new WorkersConfig(List.of(), List.of(), List.of(
                new WorkerEndpoint("http://10.0.2.1:30000", "10.0.2.1", 30000, null))));
        HealthTable t = table(set);
        StallProbes probes = probes(t);
        Worker u = set.all().get(0);
        stallTwice(t, u);
        assertThat(u.state()).isEqualTo(WorkerState.SUSPECT);
        run(probes, Duration.ofMillis(1100));
        assertThat(sent).hasSize(1);
        assertThat(sent.get(0).pair()).isEqualTo(new HealthTable.ProbePair(u, u));
        sent.get(0).done().ended(ProbeOutcome.SUCCESS, "answered 200");
        assertThat(results).as("counted once").containsExactly(u.name() + ":success");
        assertThat(u.state()).isEqualTo(WorkerState.HEALTHY);
    }
}
