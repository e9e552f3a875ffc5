package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionObserver;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimit;
import dev.sluice.gateway.config.AdmissionConfig.TenantLimits;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.coordination.CoordinationStatus.Mode;
import dev.sluice.gateway.routing.WorkerSet;
import io.netty.util.concurrent.DefaultEventExecutor;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two replicas' {@link FleetLeases} on a real redis-server: shares, Redis stopped (budget / N), Redis back. */
class FleetLeasesTest {
    private static final Duration TTL = Duration.ofMillis(1500);
    private static final Duration RENEW = Duration.ofMillis(200);
    private static final int QUEUE = 30;

    @TempDir
    Path dir;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    private static AdmissionConfig admission() {
        return new AdmissionConfig(QUEUE, 90_000, Duration.ofSeconds(30), 50_000, 6, 60_000, 12, 10_000,
                Duration.ofSeconds(1), Duration.ofSeconds(60), Duration.ofSeconds(30), List.of("normal"), "normal",
                Map.of(), new TokenizerConfig(Optional.empty(), 4.0, 4, 1));
    }

    private FleetLeases replica(String id, String url) {
        return replica(id, url, new AdmissionController[1]);
    }

    /** {@code admission[0]}: the replica's admission, to drive and to read. */
    private FleetLeases replica(String id, String url, AdmissionController[] admissionOut) {
        WorkerSet workers = new WorkerSet(new WorkersConfig(
                List.of(new WorkerEndpoint("http://10.0.0.1:30000", "10.0.0.1", 30000, 8998)),
                List.of(new WorkerEndpoint("http://10.0.1.1:30001", "10.0.1.1", 30001, null))));
        DemandTally tally = new DemandTally(AdmissionObserver.NONE);
        AdmissionController admission = new AdmissionController(withRate(admission()), workers, tally, System::nanoTime);
        admissionOut[0] = admission;
        CoordinationConfig cc = new CoordinationConfig(url, Optional.empty(), false, Optional.empty(), id, TTL, RENEW);
        DefaultEventExecutor loop = new DefaultEventExecutor();
        closing.add(() -> loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS));
        FleetLeases leases = new FleetLeases(cc, id, () -> id + ":8080", new RedisLeaseStore(cc, RENEW), admission,
                workers, tally, loop, System::nanoTime);
        closing.add(leases);
        leases.start();
        return leases;
    }

    private static void await(String what, long seconds, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("within %d s: %s", seconds, what).isLessThan(deadline);
            Thread.sleep(20); // the pace of a poll with a deadline
        }
    }

    /** Tenant acme: 6,000 tokens a minute for the fleet. */
    private static AdmissionConfig withRate(AdmissionConfig b) {
        return new AdmissionConfig(b.maxQueuedRequests(), b.maxPendingTokens(), b.queueTimeout(), b.maxRequestTokens(),
                b.prefillMaxInflightRequests(), b.prefillMaxInflightTokens(), b.decodeMaxInflightStreams(),
                b.initialPrefillTokensPerSecond(), b.retryAfterMin(), b.retryAfterMax(), b.drainGrace(), b.priorities(),
                b.defaultPriority(), Map.of(), false, new TenantLimits(TenantLimits.DEFAULTS.defaults(),
                Map.of("acme", new TenantLimit(0.5, 0.5, 6_000))), b.tokenizer(), b.scheduling(), b.prefillRate(),
                b.prefillMaxInflightTime());
    }

    private static long acme(FleetLeases l) {
        return l.status().grants().getOrDefault("tenant_tokens|acme", -1L);
    }

    @Test
    void aTenantsRateIsLeasedWhereItIsActiveSplitWhenActiveOnBothAndItsRateOverNWithRedisGone() throws Exception {
        RedisServer redis = RedisServer.start(dir.resolve("redis"));
        closing.add(redis);
        AdmissionController[] adA = new AdmissionController[1];
        AdmissionController[] adB = new AdmissionController[1];
        FleetLeases a = replica("a", redis.url(), adA);
        FleetLeases b = replica("b", redis.url(), adB);
        await("both leased", 10, () -> a.status().mode() == Mode.LEASED && b.status().mode() == Mode.LEASED
                && a.status().replicas() == 2);
        assertThat(acme(a)).as("not active: not leased").isEqualTo(-1);
        assertThat(adA[0].tokensRemaining("acme")).as("its rate / N until it is").isEqualTo(3_000);

        adA[0].completionTokens("acme", 100); // acme is active on a only
        await("acme's whole rate leased on a", 10, () -> acme(a) == 6_000);
        assertThat(acme(b)).isEqualTo(-1);
        assertThat(adA[0].tokensRemaining("acme")).as("the bucket follows: %s", a.status().grants())
                .isBetween(2_900L, 6_000L);

        adB[0].completionTokens("acme", 100); // now on both: split, never more than the rate
        // (while the demands move, each replica's part is computed at its own renewal: the sum may lag a little below)
        await("acme split", 10, () -> acme(a) > 0 && acme(b) > 0 && acme(a) + acme(b) >= 5_700);
        assertThat(acme(a) + acme(b)).as("never more than the rate").isLessThanOrEqualTo(6_000);

        redis.stop();
        await("budget / 2 once the leases lapse", 10, () -> a.status().mode() == Mode.FALLBACK
                && b.status().mode() == Mode.FALLBACK);
        assertThat(adA[0].tokensRemaining("acme")).as("its rate / 2").isLessThanOrEqualTo(3_000);
        adA[0].completionTokens("acme", 3_000);
        assertThat(adA[0].tokensRemaining("acme")).isLessThanOrEqualTo(0);
    }

    private static long queue(FleetLeases l) {
        return l.status().grants().getOrDefault("queue", -1L);
    }

    @Test
    void sharesSplitTheFleetBudgetThenBudgetOverNWithRedisGoneThenLeasesAgain() throws Exception {
        RedisServer redis = RedisServer.start(dir.resolve("redis"));
        closing.add(redis);
        FleetLeases a = replica("a", redis.url());
        FleetLeases b = replica("b", redis.url());
        assertThat(a.awaitFirstLease(5000)).isTrue();
        await("both leased with a share of the queue", 10, () -> a.status().mode() == Mode.LEASED
                && b.status().mode() == Mode.LEASED && a.status().replicas() == 2 && queue(a) > 0 && queue(b) > 0);
        // idle: an even split (the leftover unit to one of them), never more than the fleet's
        await("an even split", 10, () -> queue(a) + queue(b) == QUEUE && Math.abs(queue(a) - queue(b)) <= 1);
        assertThat(a.status().peers()).extracting(LeaseReply.Peer::replicaId).containsExactly("a", "b");
        assertThat(a.status().grants()).containsKeys("pending_tokens", "prefill_requests|http://10.0.0.1:30000",
                "prefill_tokens|http://10.0.0.1:30000", "decode_streams|http://10.0.1.1:30001");

        long stopped = System.nanoTime();
        redis.stop();
        await("down, leases held", 5, () -> !a.status().up() && !b.status().up());
        assertThat(a.status().mode()).isIn(Mode.HELD, Mode.FALLBACK);
        await("budget / 2 once the leases lapse", 10, () -> a.status().mode() == Mode.FALLBACK
                && b.status().mode() == Mode.FALLBACK);
        assertThat(System.nanoTime() - stopped).as("the leases were kept until they lapsed")
                .isGreaterThanOrEqualTo(TTL.minus(RENEW.multipliedBy(2)).toNanos());
        assertThat(queue(a)).isEqualTo(QUEUE / 2);
        assertThat(a.status().grants().get("prefill_requests|http://10.0.0.1:30000")).isEqualTo(3L);
        assertThat(a.status().reason()).isNotEmpty();

        long back = System.nanoTime();
        redis.restart();
        await("leased again", 10, () -> a.status().mode() == Mode.LEASED && b.status().mode() == Mode.LEASED);
        await("full shares again", 10, () -> queue(a) + queue(b) == QUEUE && queue(a) > 0 && queue(b) > 0);
        assertThat(System.nanoTime() - back).as("within a few renewals").isLessThan(TimeUnit.SECONDS.toNanos(10));
    }

    @Test
    void aReplicaThatNeverReachesRedisRunsOnTheWholeBudgetOverOneAfterALeaseTimeAndSaysSo() throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // nothing listens there once closed: connection refused
        }
        FleetLeases a = replica("lonely", "redis://127.0.0.1:" + port);
        assertThat(a.awaitFirstLease(300)).isFalse();
        assertThat(a.status().mode()).isEqualTo(Mode.JOINING);
        assertThat(queue(a)).isEqualTo(-1L); // no share taken before a lease time
        await("fallback after a lease time", 10, () -> a.status().mode() == Mode.FALLBACK);
        assertThat(queue(a)).isEqualTo(QUEUE);
        assertThat(a.status().up()).isFalse();
    }
}
