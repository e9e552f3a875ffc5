package dev.sluice.gateway.coordination;

import static dev.sluice.gateway.coordination.LeaseReplicas.QUEUE;
import static dev.sluice.gateway.coordination.LeaseReplicas.await;
import static dev.sluice.gateway.coordination.LeaseReplicas.queue;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.coordination.CoordinationStatus.Mode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two replicas' leases through {@code coordination.redis.cluster: true} on a real Redis Cluster: three
 * {@code redis-server} masters in cluster mode on free ports, joined by {@code redis-cli --cluster create}.
 * The client is seeded with a node that does not own the fleet's slot (so it must route by the key),
 * every key the coordination writes sits in the one slot of {@code {sluice}}, and the slot moved to
 * another master mid-run (MOVED/ASK, a node without the script cached) does not interrupt the leases.
 */
class RedisClusterLeasesTest {
    private static final Duration TTL = Duration.ofSeconds(2);
    private static final Duration RENEW = Duration.ofMillis(200);

    @TempDir
    Path dir;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    /** One master as CLUSTER NODES lists it. */
    private record Node(RedisServer server, String id) {
    }

    private List<Node> cluster(int masters) throws Exception {
        List<RedisServer> servers = new ArrayList<>();
        for (int i = 0; i < masters; i++) {
            RedisServer s = RedisServer.start(dir.resolve("node" + i), List.of("--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"));
            closing.add(s);
            servers.add(s);
        }
        List<String> create = new ArrayList<>(List.of("--cluster", "create"));
        servers.forEach(s -> create.add("127.0.0.1:" + s.port()));
        create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        servers.get(0).cli(create.toArray(String[]::new));
        for (RedisServer s : servers) {
            await("cluster_state:ok on :" + s.port(), 30, () -> call(s, "cluster", "info").contains("cluster_state:ok"));
        }
        List<Node> nodes = new ArrayList<>();
        for (RedisServer s : servers) {
            nodes.add(new Node(s, call(s, "cluster", "myid").trim()));
        }
        return nodes;
    }

    private static String call(RedisServer s, String... args) {
        try {
            return s.cli(args);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Node owner(List<Node> nodes, int slot) throws Exception {
        for (Node n : nodes) {
            for (String line : n.server().cli("cluster", "nodes").split("\n")) {
                String[] f = line.trim().split(" ");
                if (f.length < 9 || !f[0].equals(n.id())) {
                    continue;
                }
                for (int i = 8; i < f.length; i++) {
                    String[] range = f[i].split("-");
                    if (range[0].startsWith("[")) {
                        continue; // a slot being imported or migrated
                    }
                    int lo = Integer.parseInt(range[0]);
                    int hi = range.length > 1 ? Integer.parseInt(range[1]) : lo;
                    if (slot >= lo && slot <= hi) {
                        return n;
                    }
                }
            }
        }
        throw new AssertionError("no master owns slot " + slot);
    }

    /** The replica's last successful renewal (as the peers list of its reply says) came after {@code redisMillis}. */
    private static boolean renewedSince(FleetLeases l, String id, long redisMillis) {
        return l.status().peers().stream().anyMatch(p -> p.replicaId().equals(id) && p.seenMillis() > redisMillis);
    }

    private static List<String> keys(Node n) throws Exception {
        return n.server().cli("--scan").lines().filter(l -> !l.isBlank()).toList();
    }

    @Test
    void leasesOnARedisClusterStayInOneSlotAndFollowItWhenItMoves() throws Exception {
        List<Node> nodes = cluster(3);
        int slot = Integer.parseInt(nodes.get(0).server().cli("cluster", "keyslot", RedisLeaseStore.FLEET_KEY).trim());
        Node owner = owner(nodes, slot);
        Node seed = nodes.stream().filter(n -> n != owner).findFirst().orElseThrow();

        try (LeaseReplicas fleet = new LeaseReplicas()) {
            String url = "redis://127.0.0.1:" + seed.server().port();
            FleetLeases a = fleet.start(new CoordinationConfig(url, Optional.empty(), true, Optional.empty(), "a", TTL,
                    RENEW));
            FleetLeases b = fleet.start(new CoordinationConfig(url, Optional.empty(), true, Optional.empty(), "b", TTL,
                    RENEW));
            await("both leased through the cluster, an even split", 20, () -> a.status().mode() == Mode.LEASED
                    && b.status().mode() == Mode.LEASED && a.status().replicas() == 2 && b.status().replicas() == 2
                    && queue(a) + queue(b) == QUEUE && Math.abs(queue(a) - queue(b)) <= 1);

            // every key the coordination wrote: one, in {sluice}'s slot, on the master that owns it
            assertThat(keys(owner)).containsExactly(RedisLeaseStore.FLEET_KEY);
            for (Node n : nodes) {
                if (n != owner) {
                    assertThat(keys(n)).as("keys on the master without the slot").isEmpty();
                }
            }
            assertThat(owner.server().cli("cluster", "countkeysinslot", String.valueOf(slot)).trim()).isEqualTo("1");
            assertThat(owner.server().cli("hlen", RedisLeaseStore.FLEET_KEY).trim()).isEqualTo("2");

            // the slot moves to another master (as a resharding does): IMPORTING, MIGRATING, MIGRATE, NODE everywhere.
            // A renewal caught in the move may fail (a redirect to a node connection still being made is rejected,
            // not queued): the leases are held meanwhile, never lapse, and the next renewals reach the new owner.
            Node target = nodes.stream().filter(n -> n != owner && n != seed).findFirst().orElseThrow();
            String s = String.valueOf(slot);
            target.server().cli("cluster", "setslot", s, "importing", owner.id());
            owner.server().cli("cluster", "setslot", s, "migrating", target.id());
            owner.server().cli("migrate", "127.0.0.1", String.valueOf(target.server().port()), RedisLeaseStore.FLEET_KEY,
                    "0", "5000");
            target.server().cli("cluster", "setslot", s, "node", target.id());
            owner.server().cli("cluster", "setslot", s, "node", target.id());
            seed.server().cli("cluster", "setslot", s, "node", target.id());
            String[] time = target.server().cli("time").trim().split("\\s+");
            long movedMillis = Long.parseLong(time[0]) * 1000 + Long.parseLong(time[1]) / 1000; // Redis's clock
            await("both renewed on the new owner after the move", 10, () -> {
                assertThat(a.status().mode()).as("a's lease never lapses").isNotEqualTo(Mode.FALLBACK);
                assertThat(b.status().mode()).as("b's lease never lapses").isNotEqualTo(Mode.FALLBACK);
                return a.status().mode() == Mode.LEASED && b.status().mode() == Mode.LEASED
                        && renewedSince(a, "a", movedMillis) && renewedSince(b, "b", movedMillis);
            });
            // then a lease time of renewals on the new owner without a miss
            long watchUntil = System.nanoTime() + TTL.toNanos();
            while (System.nanoTime() < watchUntil) {
                assertThat(a.status().mode()).as("a after the slot moved").isEqualTo(Mode.LEASED);
                assertThat(b.status().mode()).as("b after the slot moved").isEqualTo(Mode.LEASED);
                Thread.sleep(20); // the pace of the watch
            }
            assertThat(a.status().lastLeaseAgeMillis()).isLessThan(TTL.toMillis());
            assertThat(owner(nodes, slot)).isEqualTo(target);
            assertThat(keys(target)).containsExactly(RedisLeaseStore.FLEET_KEY);
            assertThat(keys(owner)).isEmpty();
            assertThat(target.server().cli("hlen", RedisLeaseStore.FLEET_KEY).trim()).isEqualTo("2");
            assertThat(queue(a) + queue(b)).isEqualTo(QUEUE);
        }
    }
}
