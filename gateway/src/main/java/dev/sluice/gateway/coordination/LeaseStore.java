package dev.sluice.gateway.coordination;

import java.util.concurrent.CompletionStage;

/** Where the fleet's leases live: one renewal is one round trip, never on a request's path. */
public interface LeaseStore extends AutoCloseable {
    /**
     * Runs the lease script for one replica: heartbeat, demand report, grant.
     *
     * @param generation this process's incarnation (chosen once at start, unique)
     * @param demandJson {@code {resource: [capacity, usage, demand]}}
     * @return the script's reply (JSON), or a failure (Redis unreachable, timed out)
     */
    default CompletionStage<String> renew(String replicaId, String address, long generation, long ttlMillis,
                                          String demandJson) {
        return renew(replicaId, address, generation, ttlMillis, demandJson, "{}");
    }

    /**
     * As above, with {@code routedJson}: {@code {prefill worker url: prompt tokens routed there lately}},
     * kept with the member and returned in every member's {@code l} (docs/scale-out.md, the share guard).
     */
    default CompletionStage<String> renew(String replicaId, String address, long generation, long ttlMillis,
                                          String demandJson, String routedJson) {
        return renew(replicaId, address, generation, ttlMillis, demandJson, routedJson, false);
    }

    /**
     * As above; {@code draining}: this replica asks only for what it uses and takes no spare (its drain
     * has begun), and the others see that in its entry.
     */
    CompletionStage<String> renew(String replicaId, String address, long generation, long ttlMillis,
                                  String demandJson, String routedJson, boolean draining);

    /** Gives this incarnation's leases back at once (a graceful stop): the others need not wait for the lease time. */
    CompletionStage<Void> release(String replicaId, long generation);

    @Override
    void close();
}
