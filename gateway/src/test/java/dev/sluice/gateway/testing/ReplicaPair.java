package dev.sluice.gateway.testing;

import dev.sluice.testbed.sim.SimCluster;
import java.net.http.HttpClient;
import java.util.List;
import java.util.function.Predicate;

/**
 * Two gateway replicas started from one config in front of one simulated cluster, as a fleet's
 * replicas behind a load balancer are: what one placed, the other has to learn from the workers
 * (their KV events, the shared leases). Closed B first, then A (which closes the cluster).
 */
public final class ReplicaPair implements AutoCloseable {
    public final PdTestbed a;
    public final PdTestbed b;

    private ReplicaPair(PdTestbed a, PdTestbed b) {
        this.a = a;
        this.b = b;
    }

    /** Both replicas ready; if B cannot start, A is closed before the failure propagates. */
    public static ReplicaPair start(SimCluster cluster, String yaml) throws Exception {
        PdTestbed a = PdTestbed.adopt(cluster, PdTestbed.startGateway(yaml));
        try {
            return new ReplicaPair(a, PdTestbed.adopt(cluster, PdTestbed.startGateway(yaml)));
        } catch (Exception | Error e) {
            a.close();
            throw e;
        }
    }

    /**
     * Flushes the prefills' caches until both replicas {@code heard} them (a PUB socket drops what it
     * sends before a subscription arrives); a failure lists what each replica saw of its streams.
     */
    public void awaitSubscribed(HttpClient http, SimCluster cluster, Predicate<PdTestbed> heard) throws Exception {
        PdTestbed.awaitSubscribed(http, cluster.prefillWorkers(), () -> heard.test(a) && heard.test(b), List.of(a, b));
    }

    @Override
    public void close() throws Exception {
        try {
            b.close();
        } finally {
            a.close();
        }
    }
}
