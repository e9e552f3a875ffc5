package dev.sluice.testbed.sim;

import java.util.Objects;
import java.util.Optional;

/**
 * A server's KV event streams (SGLang's {@code --kv-events-config}): one {@link KvEventPublisher}
 * per DP rank, each rank's prefix cache publishing its own events on the endpoint's port + rank, as
 * each SGLang scheduler creates its own publisher (citations in {@link KvEventPublisher}). Opened
 * and closed from any thread (the cluster, a test); the caches publish on the server's event loop.
 */
final class KvEventStreams {
    private final PrefixCaches caches;
    /** One publisher per DP rank, rank order; null while not publishing. */
    private volatile KvEventPublisher[] publishers;

    KvEventStreams(PrefixCaches caches) {
        this.caches = Objects.requireNonNull(caches, "caches");
    }

    /**
     * Starts publishing, one PUB socket per DP rank bound to {@code endpoint}'s port + rank, unless
     * already publishing; returns rank 0's bound endpoint. Port {@code *}: rank 0 takes any free port
     * and the others the ports after it (tried again elsewhere when one of those is taken).
     */
    synchronized String open(String endpoint, String topic) {
        if (publishers == null) {
            publishers = KvEventEndpoints.bindRanks(endpoint, caches.ranks(),
                    (e, rank) -> new KvEventPublisher(e, topic, rank));
            caches.publishTo(publishers);
        }
        return publishers[0].endpoint();
    }

    /** Rank 0's bound endpoint (rank r's is its port + r), while publishing. */
    Optional<String> endpoint() {
        KvEventPublisher[] p = publishers;
        return p == null ? Optional.empty() : Optional.of(p[0].endpoint());
    }

    /** Stops publishing: the caches stop first, then every rank's socket closes. */
    synchronized void close() {
        if (publishers != null) {
            caches.publishTo(null);
            for (KvEventPublisher p : publishers) {
                p.close();
            }
            publishers = null;
        }
    }
}
