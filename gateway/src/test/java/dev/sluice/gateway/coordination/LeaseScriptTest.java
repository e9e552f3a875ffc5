package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.coordination.ProportionalShares.Demand;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code lease.lua} against a real redis-server: the Java reference's split, no over-commit, expiry, fencing. */
class LeaseScriptTest {
    @TempDir
    static Path dir;
    private static RedisServer redis;
    private static RedisLeaseStore store;

    @BeforeAll
    static void start() throws Exception {
        redis = RedisServer.start(dir.resolve("redis"));
        store = new RedisLeaseStore(new CoordinationConfig(redis.url(), Optional.empty(), false, Optional.empty(), "t",
                Duration.ofSeconds(5), Duration.ofSeconds(1)), Duration.ofSeconds(2));
    }

    @AfterAll
    static void stop() throws Exception {
        store.close();
        redis.close();
    }

    private static LeaseReply renew(String id, long gen, long ttlMs, String resource, long cap, long usage, long demand)
            throws Exception {
        String json = "{\"" + resource + "\":[" + cap + "," + usage + "," + demand + "]}";
        return LeaseReply.parse(store.renew(id, id + ".addr", gen, ttlMs, json).toCompletableFuture()
                .get(10, TimeUnit.SECONDS));
    }

    @Test
    void onceEveryoneHasRenewedTheGrantsAreTheJavaReferencesSplit() throws Exception {
        String res = "split";
        long[] demand = {30, 10, 10};
        long[] gen = {101, 102, 103};
        LeaseReply last = null;
        Map<String, Long> grants = new java.util.HashMap<>();
        for (int round = 0; round < 3; round++) { // the first rounds are capped by what the others held before
            for (int i = 0; i < 3; i++) {
                last = renew("split-" + i, gen[i], 5000, res, 10, 0, demand[i]);
                grants.put("split-" + i + "#" + gen[i], last.grants().get(res));
            }
        }
        List<Demand> d = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            d.add(new Demand("split-" + i + "#" + gen[i], demand[i]));
        }
        assertThat(grants).isEqualTo(ProportionalShares.targets(10, d));
        assertThat(last.members()).extracting(LeaseReply.Peer::replicaId).contains("split-0", "split-1", "split-2");
        assertThat(last.members()).filteredOn(p -> p.replicaId().equals("split-0"))
                .extracting(LeaseReply.Peer::address).containsExactly("split-0.addr");
    }

    @Test
    void grantsNeverOverCommitUnderConcurrentRenewals() throws Exception {
        String res = "race";
        long cap = 37;
        int replicas = 5;
        ExecutorService pool = Executors.newFixedThreadPool(replicas);
        Map<String, Long> held = new ConcurrentHashMap<>(); // member key -> max(grant, usage) as last reported
        AtomicReference<String> violation = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(replicas);
        for (int i = 0; i < replicas; i++) {
            int me = i;
            pool.execute(() -> {
                Random r = new Random(me);
                long gen = 200 + me;
                long grant = 0;
                try {
                    for (int round = 0; round < 150 && violation.get() == null; round++) {
                        long usage = grant == 0 ? 0 : r.nextInt((int) grant + 1); // a replica uses at most its grant
                        LeaseReply reply = renew("race-" + me, gen, 5000, res, cap, usage, usage + r.nextInt(40));
                        grant = reply.grants().get(res);
                        long sum = 0;
                        for (LeaseReply.Peer p : reply.members()) {
                            LeaseReply.Lease l = p.leases().get(res);
                            if (l != null) {
                                sum += Math.max(l.grant(), l.usage());
                            }
                        }
                        if (sum > cap) {
                            violation.set("round " + round + ": " + reply.members());
                        }
                        held.put("race-" + me, grant);
                    }
                } catch (Exception e) {
                    violation.compareAndSet(null, e.toString());
                } finally {
                    done.countDown();
                }
            });
        }
        assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
        pool.shutdown();
        assertThat(violation.get()).isNull();
        assertThat(held).hasSize(replicas);
        assertThat(held.values().stream().mapToLong(Long::longValue).sum()).isLessThanOrEqualTo(cap).isPositive();
    }

    @Test
    void aReplicaThatStopsRenewingFreesItsShareAfterTheTtl() throws Exception {
        String res = "expiry";
        LeaseReply a = renew("exp-a", 301, 1000, res, 12, 6, 20);
        assertThat(a.grants().get(res)).isEqualTo(12L); // alone: everything
        LeaseReply b = renew("exp-b", 302, 1000, res, 12, 0, 20);
        assertThat(b.joined()).isTrue();
        assertThat(b.grants().get(res)).isZero(); // a holds its grant until it renews (smaller) or lapses
        // a stops renewing; b renews on: within a generous bound after the ttl, b holds the whole
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long started = System.nanoTime();
        while (b.grants().get(res) < 12 && System.nanoTime() < deadline) {
            Thread.sleep(100); // b's renew interval
            b = renew("exp-b", 302, 1000, res, 12, 0, 20);
            assertThat(b.joined()).isFalse();
        }
        assertThat(b.grants().get(res)).isEqualTo(12L);
        assertThat(System.nanoTime() - started).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(800));
        assertThat(b.members()).extracting(LeaseReply.Peer::replicaId).doesNotContain("exp-a");

        // a comes back after its lease lapsed: it joins again, once (its old entry is gone)
        LeaseReply back = renew("exp-a", 301, 1000, res, 12, 0, 20);
        assertThat(back.joined()).isTrue();
        assertThat(back.generation()).isEqualTo(301);
        assertThat(back.grants().get(res)).isZero(); // b holds everything until it renews
        assertThat(back.members()).filteredOn(p -> p.replicaId().equals("exp-a")).hasSize(1);
    }

    @Test
    void aReleasedLeaseIsFreeAtTheOthersNextRenewal() throws Exception {
        String res = "release";
        renew("rel-a", 601, 60_000, res, 10, 5, 20);
        LeaseReply b = renew("rel-b", 602, 60_000, res, 10, 0, 20);
        assertThat(b.grants().get(res)).isZero();
        store.release("rel-a", 601).toCompletableFuture().get(10, TimeUnit.SECONDS);
        b = renew("rel-b", 602, 60_000, res, 10, 0, 20);
        assertThat(b.grants().get(res)).isEqualTo(10L);
        assertThat(b.members()).extracting(LeaseReply.Peer::replicaId).doesNotContain("rel-a");
    }

    @Test
    void aTenantsRateIsSplitWithoutOverCommitAndAnIdleOnesShareGoesToTheOthersAtTheirNextRenewal() throws Exception {
        // a tenant's rate (tokens per minute), its usage the rate in force on each replica; the name holds a '|'
        String res = "tenant_tokens|team|b";
        LeaseReply a = renew("ten-a", 801, 60_000, res, 36_000, 12_000, 40_000);
        assertThat(a.grants().get(res)).isEqualTo(36_000L); // alone: the whole rate
        LeaseReply b = renew("ten-b", 802, 60_000, res, 36_000, 12_000, 40_000);
        assertThat(b.grants().get(res)).as("a holds the whole until it renews").isZero();
        a = renew("ten-a", 801, 60_000, res, 36_000, 36_000, 40_000);
        assertThat(a.grants().get(res)).as("a shrinks to its part of the split").isEqualTo(18_000L);
        b = renew("ten-b", 802, 60_000, res, 36_000, 0, 40_000);
        assertThat(b.grants().get(res)).as("a still reported the whole in force: b waits").isZero();
        a = renew("ten-a", 801, 60_000, res, 36_000, 18_000, 40_000);
        b = renew("ten-b", 802, 60_000, res, 36_000, 0, 40_000);
        assertThat(List.of(a.grants().get(res), b.grants().get(res))).containsExactly(18_000L, 18_000L);
        // the tenant goes idle on a: a renews without it (its other budgets only), b takes the whole
        a = LeaseReply.parse(store.renew("ten-a", "ten-a.addr", 801, 60_000, "{\"queue\":[32,0,1]}")
                .toCompletableFuture().get(10, TimeUnit.SECONDS));
        assertThat(a.grants()).doesNotContainKey(res);
        b = renew("ten-b", 802, 60_000, res, 36_000, 12_000, 40_000);
        assertThat(b.grants().get(res)).isEqualTo(36_000L);
    }

    @Test
    void twoProcessesWithOneReplicaIdAreTwoMembers() throws Exception {
        String res = "twins";
        LeaseReply first = renew("twin", 401, 5000, res, 10, 5, 5);
        LeaseReply second = renew("twin", 402, 5000, res, 10, 0, 20);
        assertThat(second.members()).filteredOn(p -> p.replicaId().equals("twin")).hasSize(2);
        assertThat(second.grants().get(res)).isLessThanOrEqualTo(10L - first.grants().get(res));
    }

    @Test
    void aRenewalSentAgainAfterALostAnswerIsStillOneMember() throws Exception {
        String res = "again";
        renew("again", 501, 5000, res, 10, 0, 5);
        LeaseReply twice = renew("again", 501, 5000, res, 10, 0, 5);
        assertThat(twice.joined()).isFalse();
        assertThat(twice.members()).filteredOn(p -> p.replicaId().equals("again")).hasSize(1);
        assertThat(twice.grants().get(res)).isEqualTo(10L);
    }
    @Test
    void eachMembersRoutedFiguresComeBackWithItAndThePeersAreSummedAgedByTheirReport() throws Exception {
        String res = "routed";
        String demand = "{\"" + res + "\":[10,0,0]}";
        store.renew("routed-a", "a.addr", 601, 5000, demand, "{\"http://p0:30000\":4000,\"http://p1:30000\":1000}")
                .toCompletableFuture().get(10, TimeUnit.SECONDS);
        LeaseReply b = LeaseReply.parse(store.renew("routed-b", "b.addr", 602, 5000, demand,
                "{\"http://p0:30000\":500}").toCompletableFuture().get(10, TimeUnit.SECONDS));
        assertThat(b.members()).filteredOn(p -> p.replicaId().equals("routed-a")).singleElement()
                .extracting(LeaseReply.Peer::routed).isEqualTo(Map.of("http://p0:30000", 4000.0, "http://p1:30000", 1000.0));
        assertThat(b.members()).filteredOn(p -> p.replicaId().equals("routed-b")).singleElement()
                .extracting(LeaseReply.Peer::routed).isEqualTo(Map.of("http://p0:30000", 500.0));
        // a renewal without figures (an older replica's) carries none
        LeaseReply c = renew("routed-c", 603, 5000, res, 10, 0, 0);
        assertThat(c.members()).filteredOn(p -> p.replicaId().equals("routed-c")).singleElement()
                .extracting(LeaseReply.Peer::routed).isEqualTo(Map.of());

        // b's view of the others: a's figures only (its own left out), aged by how long before the answer Redis heard them
        dev.sluice.gateway.routing.FleetRoutedLoad fleet = new dev.sluice.gateway.routing.FleetRoutedLoad(
                Duration.ofSeconds(60).toNanos(), System::nanoTime);
        Map<String, Double> peers = PeerLoad.summed(b, "routed-b", 602, fleet);
        assertThat(peers).containsOnlyKeys("http://p0:30000", "http://p1:30000");
        assertThat(peers.get("http://p0:30000")).isBetween(4000 * 0.99, 4000.0);
        LeaseReply.Peer a = b.members().stream().filter(p -> p.replicaId().equals("routed-a")).findFirst().orElseThrow();
        LeaseReply later = new LeaseReply(b.generation(), a.seenMillis() + 60_000, false, b.grants(), b.targets(),
                List.of(a));
        assertThat(PeerLoad.summed(later, "routed-b", 602, fleet).get("http://p0:30000")).isCloseTo(2000.0,
                org.assertj.core.data.Offset.offset(1.0));
    }

    /** A renewal in the current report format: {@code [capacity, usage, demand, enforced, headroom]}. */
    private static LeaseReply renew5(RedisLeaseStore on, String id, long gen, String resource, long cap, long usage,
                                     long demand, long enforced, long headroom, boolean draining) throws Exception {
        String json = "{\"" + resource + "\":[" + cap + "," + usage + "," + demand + "," + enforced + "," + headroom
                + "]}";
        return LeaseReply.parse(on.renew(id, id + ".addr", gen, 60_000, json, "{}", draining).toCompletableFuture()
                .get(10, TimeUnit.SECONDS));
    }

    @Test
    void aShrinkingGrantStaysHeldUntilItsHolderSaysItAdmitsOnTheSmallerOne() throws Exception {
        String res = "shrink";
        LeaseReply a = renew5(store, "shr-a", 901, res, 10, 0, 1, 0, 1, false);
        assertThat(a.grants().get(res)).isEqualTo(10L);
        LeaseReply b = renew5(store, "shr-b", 902, res, 10, 0, 1, 0, 1, false);
        assertThat(b.grants().get(res)).as("a holds all").isZero();
        // a renews (still admitting on its 10) and is told 5: until it applies that, it may admit up to 10
        a = renew5(store, "shr-a", 901, res, 10, 0, 1, 10, 1, false);
        assertThat(a.grants().get(res)).isEqualTo(5L);
        b = renew5(store, "shr-b", 902, res, 10, 0, 1, 0, 1, false);
        assertThat(b.grants().get(res)).as("a has not said it admits on 5 yet: before, b got 5 here, 15 in all")
                .isZero();
        assertThat(b.targets().get(res)).as("what b will hold once a has given back").isEqualTo(5L);
        a = renew5(store, "shr-a", 901, res, 10, 0, 1, 5, 1, false); // a now admits on 5
        b = renew5(store, "shr-b", 902, res, 10, 0, 1, 0, 1, false);
        assertThat(List.of(a.grants().get(res), b.grants().get(res))).containsExactly(5L, 5L);
    }

    @Test
    void aDrainingReplicaGivesBackWhatItDoesNotUseAtOnce() throws Exception {
        String res = "drain";
        renew5(store, "dr-a", 951, res, 12, 0, 1, 0, 1, false);
        renew5(store, "dr-b", 952, res, 12, 0, 1, 0, 1, false);
        LeaseReply a = renew5(store, "dr-a", 951, res, 12, 0, 1, 12, 1, false);
        LeaseReply b = renew5(store, "dr-b", 952, res, 12, 0, 1, 0, 1, false);
        a = renew5(store, "dr-a", 951, res, 12, 0, 1, a.grants().get(res), 1, false);
        b = renew5(store, "dr-b", 952, res, 12, 0, 1, b.grants().get(res), 1, false);
        assertThat(List.of(a.grants().get(res), b.grants().get(res))).containsExactly(6L, 6L);
        // a starts draining with 2 still in use: it asks for those, and takes no spare
        a = renew5(store, "dr-a", 951, res, 12, 2, 2, 6, 0, true);
        assertThat(a.grants().get(res)).isEqualTo(2L);
        a = renew5(store, "dr-a", 951, res, 12, 2, 2, 2, 0, true); // it admits on 2 now
        b = renew5(store, "dr-b", 952, res, 12, 0, 1, 6, 1, false);
        assertThat(b.grants().get(res)).as("the rest is b's a round trip later, not after the drain").isEqualTo(10L);
    }

    @Test
    void twoFleetsOnOneRedisEachHoldTheirOwnWholeBudget() throws Exception {
        CoordinationConfig base = new CoordinationConfig(redis.url(), Optional.empty(), false, Optional.empty(), "t",
                Duration.ofSeconds(5), Duration.ofSeconds(1));
        try (RedisLeaseStore prod = new RedisLeaseStore(new CoordinationConfig(base.url(), base.password(), false,
                base.caFile(), "t", base.leaseTtl(), base.renewInterval(), "prod", 0), Duration.ofSeconds(2));
             RedisLeaseStore staging = new RedisLeaseStore(new CoordinationConfig(base.url(), base.password(), false,
                     base.caFile(), "t", base.leaseTtl(), base.renewInterval(), "staging", 0), Duration.ofSeconds(2))) {
            String res = "fleets";
            LeaseReply p = renew5(prod, "fl-p", 1001, res, 32, 0, 1, 0, 1, false);
            LeaseReply q = renew5(staging, "fl-s", 1002, res, 32, 0, 1, 0, 1, false);
            assertThat(p.grants().get(res)).isEqualTo(32L);
            assertThat(q.grants().get(res)).as("another fleet: its own key, its own budget").isEqualTo(32L);
            assertThat(q.members()).extracting(LeaseReply.Peer::replicaId).containsExactly("fl-s");
            assertThat(redis.cli("exists", "{sluice:prod}:fleet").trim()).isEqualTo("1");
            assertThat(redis.cli("exists", "{sluice:staging}:fleet").trim()).isEqualTo("1");
        }
    }

    @Test
    void theScriptsSplitWithHeadroomsAndDrainingIsTheJavaReferences() throws Exception {
        Random r = new Random(29);
        for (int round = 0; round < 40; round++) {
            String res = "ref-" + round;
            long cap = 1 + r.nextInt(64);
            int n = 2 + r.nextInt(4);
            List<Demand> d = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                long demand = r.nextInt(40);
                d.add(new Demand("ref" + round + "-" + i + "#" + (2000 + i), demand, r.nextInt(4), r.nextInt(4) == 0));
            }
            LeaseReply last = null;
            for (int pass = 0; pass < 2; pass++) {
                for (int i = 0; i < n; i++) {
                    Demand x = d.get(i);
                    last = renew5(store, "ref" + round + "-" + i, 2000 + i, res, cap, 0, x.demand(), 0, x.headroom(),
                            x.draining());
                }
            }
            // the last renewal's target is computed over everyone's report, as the reference does
            assertThat(last.targets().get(res)).as("round %d: %s of %d", round, d, cap)
                    .isEqualTo(ProportionalShares.targets(cap, d).get(d.get(n - 1).key()));
        }
    }
}
