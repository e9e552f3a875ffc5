package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.CoordinationConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fleet's invariant, against a real redis-server and the real {@code lease.lua}: at every moment
 * the shares the replicas admit on add up to at most the budget, while replicas join, leave, pause
 * (past their lease), lose answers, get answers late, change their usage and renew in random order.
 *
 * <p>Each replica follows the holder's rules of {@link FleetLeases}, with the real {@link LeaseTiming}:
 * it admits on a grant only from the moment its answer is applied until the lease counted from the
 * renewal's send runs out (then on nothing); an answer that comes after that is dropped; each renewal
 * reports the grant it admits on until the answer is applied ({@code enforced}); its usage never grows
 * past what it admits on (a shrunk grant leaves usage above it, draining). The second test runs the
 * same schedule without fencing and without the report, and must see the budget over-committed: the
 * check can fail.
 */
class FleetInvariantRandomizedTest {
    private static final long TTL_MS = 300;
    private static final long RENEW_MS = 60;
    private static final long CAP = 24;
    private static final String RES = "queue";

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

    /** One replica as the test drives it. */
    private static final class Replica {
        final String id;
        final long gen;
        long grant; // the grant applied last
        long validUntil = Long.MIN_VALUE; // nanos; MIN: none applied
        long usage;
        String inTransit; // an answer not yet applied
        long inTransitSent;
        long pausedUntil;
        boolean carries; // still running work admitted on a lease that ran out (see the check)

        Replica(String id, long gen) {
            this.id = id;
            this.gen = gen;
        }

        /** What it admits on now. */
        long enforced(long now, boolean fenced) {
            if (validUntil == Long.MIN_VALUE) {
                return 0;
            }
            return !fenced || now - validUntil < 0 ? grant : 0;
        }
    }

    private record Outcome(int steps, int violations, String first, int lateDropped, int renewals) {
    }

    private static Outcome run(long seed, int steps, boolean rules) throws Exception {
        Random r = new Random(seed);
        LeaseTiming timing = new LeaseTiming(TimeUnit.MILLISECONDS.toNanos(TTL_MS), TimeUnit.MILLISECONDS.toNanos(RENEW_MS));
        String fleetTag = "inv-" + seed + "-" + rules;
        String res = RES + "-" + fleetTag; // a resource of its own: the runs before it hold nothing of it
        List<Replica> live = new ArrayList<>();
        long nextGen = 1;
        int violations = 0;
        int late = 0;
        int renewals = 0;
        String first = null;
        for (int i = 0; i < 3; i++) {
            live.add(new Replica(fleetTag + "-" + i, nextGen++));
        }
        for (int step = 0; step < steps; step++) {
            long now = System.nanoTime();
            int op = r.nextInt(100);
            Replica x = live.isEmpty() ? null : live.get(r.nextInt(live.size()));
            if (x != null && now - x.pausedUntil < 0 && op < 90) {
                op = 99; // paused: it does nothing; time passes for the others
            }
            if (op < 35 && x != null && x.inTransit == null) {
                // a renewal: usage, demand (usage + what waits + a headroom of 1), what it admits on now
                long enforced = x.enforced(now, rules);
                long demand = x.usage + r.nextInt((int) CAP) + 1;
                String json = "{\"" + res + "\":[" + CAP + "," + x.usage + "," + demand + ","
                        + (rules ? enforced : 0) + ",1]}";
                x.inTransitSent = now;
                x.inTransit = store.renew(x.id, x.id, x.gen, TTL_MS, json, "{}", false).toCompletableFuture()
                        .get(10, TimeUnit.SECONDS);
                renewals++;
            } else if (op < 70 && x != null && x.inTransit != null) {
                // the answer arrives: put in force, unless the lease it granted has already run out
                LeaseReply reply = LeaseReply.parse(x.inTransit);
                x.inTransit = null;
                if (!rules || timing.grantUsable(x.inTransitSent, now)) {
                    x.grant = reply.grants().get(res);
                    x.validUntil = timing.validUntil(x.inTransitSent);
                } else {
                    late++;
                }
            } else if (op < 82 && x != null) {
                // usage moves: down freely, up only within what it admits on now
                long room = x.enforced(now, rules);
                x.usage = x.usage > room ? r.nextInt((int) x.usage + 1) : r.nextInt((int) room + 1);
            } else if (op < 86 && x != null) {
                x.pausedUntil = now + TimeUnit.MILLISECONDS.toNanos(r.nextInt((int) (3 * TTL_MS)));
            } else if (op < 88 && x != null) {
                x.inTransit = null; // an answer lost on the way
            } else if (op < 90 && x != null && live.size() > 1) {
                store.release(x.id, x.gen).toCompletableFuture().get(10, TimeUnit.SECONDS); // a graceful leave
                live.remove(x);
            } else if (op < 93 && live.size() < 7) {
                live.add(new Replica(fleetTag + "-" + live.size() + "-" + nextGen, nextGen++));
            } else {
                Thread.sleep(r.nextInt(15)); // time passes: renewals come late, leases run out
            }
            long at = System.nanoTime();
            long sum = 0;
            StringBuilder who = new StringBuilder();
            for (Replica y : live) {
                // what it admits on, or uses beyond that while it drains. A replica whose lease ran out admits on
                // nothing, but the work it admitted before runs on at the workers, and once Redis has dropped its
                // entry nobody counts it: that work is the one over-commit leases cannot prevent (docs/scale-out.md,
                // "Fencing"), so such a replica counts what it admits on until its usage is back within it
                long e = y.enforced(at, rules);
                boolean lapsed = rules && y.validUntil != Long.MIN_VALUE && at - y.validUntil >= 0;
                if (lapsed && y.usage > 0) {
                    y.carries = true;
                } else if (y.usage <= e) {
                    y.carries = false;
                }
                long holds = y.carries ? e : Math.max(e, y.usage);
                sum += holds;
                who.append(y.id).append('=').append(holds).append("[g=").append(y.grant).append(",u=").append(y.usage)
                        .append(",left_ms=").append(y.validUntil == Long.MIN_VALUE ? -1 : (y.validUntil - at) / 1_000_000)
                        .append(",transit=").append(y.inTransit != null).append("] ");
            }
            if (sum > CAP) {
                violations++;
                if (first == null) {
                    first = "step " + step + " op " + op + ": " + sum + " > " + CAP + " (" + who.toString().trim() + ") redis: "
                            + redis.cli("hgetall", "{sluice}:fleet").replace('\n', ' ');
                }
            }
        }
        return new Outcome(steps, violations, first, late, renewals);
    }

    @Test
    void theSharesAdmittedOnNeverAddUpToMoreThanTheBudget() throws Exception {
        for (long seed = 1; seed <= 4; seed++) {
            Outcome o = run(seed, 400, true);
            assertThat(o.violations()).as("seed %d: %s", seed, o.first()).isZero();
            assertThat(o.renewals()).as("the schedule renewed").isGreaterThan(40);
        }
    }

    @Test
    void withoutTheHoldersFenceAndItsReportTheSameSchedulesOverCommit() throws Exception {
        int violations = 0;
        for (long seed = 1; seed <= 2; seed++) { // 150 and 204 over-committed steps when measured
            violations += run(seed, 400, false).violations();
        }
        assertThat(violations).as("the invariant's check can fail").isPositive();
    }
}
