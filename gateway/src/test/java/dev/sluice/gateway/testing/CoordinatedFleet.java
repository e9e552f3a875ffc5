package dev.sluice.gateway.testing;

import dev.sluice.gateway.coordination.RedisServerAccess;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What the coordinated-replica tests stand on: a simulated SGLang PD cluster (fast decode, two
 * tokens per answer, no health generations), a real redis-server, and the gateways a test starts
 * in front of them (closed with the fleet unless a test stopped one itself).
 */
public final class CoordinatedFleet implements AutoCloseable {
    public final SimCluster cluster;
    public final RedisServerAccess redis;
    private final List<GatewayServer> gateways = new ArrayList<>();

    private CoordinatedFleet(SimCluster cluster, RedisServerAccess redis) {
        this.cluster = cluster;
        this.redis = redis;
    }

    /** {@code prefills} prefills at {@code prefillTokensPerSecond} and one decode; redis-server under {@code dir}. */
    public static CoordinatedFleet start(Path dir, int prefills, int prefillTokensPerSecond) throws Exception {
        SimCluster cluster = SimCluster.start(prefills, 1, 0, SimConfig.defaults().withHealthGeneration(false)
                .withPrefillTokensPerSecond(prefillTokensPerSecond).withDecodeStep(Duration.ofMillis(1))
                .withDefaultMaxTokens(2), SimMode.SGLANG);
        try {
            return new CoordinatedFleet(cluster, RedisServerAccess.start(dir));
        } catch (Exception e) {
            cluster.close();
            throw e;
        }
    }

    /** {@code listen} (port 0), {@code disaggregation: sglang} and {@code workers}: every prefill, the decode. */
    public String workersYaml() {
        StringBuilder y = new StringBuilder("listen: {host: 127.0.0.1, port: 0}\ndisaggregation: sglang\nworkers:\n  prefill:\n");
        for (PrefillServer p : cluster.prefills()) {
            y.append("    - url: ").append(p.url()).append("\n      bootstrap_port: ").append(p.bootstrapPort()).append('\n');
        }
        return y.append("  decode:\n    - url: ").append(cluster.decodes().get(0).url()).append('\n').toString();
    }

    /** A {@code coordination} section on this fleet's redis-server, renewing every 200 ms. */
    public String coordinationYaml(String replicaId, String leaseTtl) {
        return "coordination:\n  redis: {url: \"" + redis.url() + "\"}\n  replica_id: " + replicaId
                + "\n  lease_ttl: " + leaseTtl + "\n  renew_interval: 200ms\n";
    }

    /** A gateway from {@code yaml}, started and ready ({@link PdTestbed#startGateway}); closed with the fleet. */
    public GatewayServer gateway(String yaml) throws Exception {
        GatewayServer g = PdTestbed.startGateway(yaml);
        gateways.add(g);
        return g;
    }

    /** Closes {@code g} now (a graceful stop: it gives its leases back). */
    public void stop(GatewayServer g) {
        gateways.remove(g);
        g.close();
    }

    @Override
    public void close() throws Exception {
        for (GatewayServer g : gateways) {
            g.close();
        }
        gateways.clear();
        cluster.close();
        redis.close();
    }
}
