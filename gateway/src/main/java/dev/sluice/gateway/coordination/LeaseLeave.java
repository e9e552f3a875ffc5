package dev.sluice.gateway.coordination;

import io.netty.util.concurrent.EventExecutor;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A replica's leave from the fleet: the release of its leases, sent from the loop its renewals are sent from.
 * Sent from another thread, a renewal already queued on that loop (a drain's immediate renewal, say) could reach
 * Redis after the release and write the replica's lease back, to hold a share nobody uses for a lease time;
 * sent from the loop, after every renewal sent there, Redis applies the release last, and the leave marks the
 * leases left so that no renewal follows. A loop already gone sends it from the caller (nothing renews then).
 * Waits up to a second for each step; a replica that cannot reach Redis lets its lease expire.
 */
final class LeaseLeave {
    private static final Logger log = LoggerFactory.getLogger(FleetLeases.class); // the leases' own log lines

    private LeaseLeave() {
    }

    static void run(EventExecutor loop, Callable<CompletionStage<Void>> leave, String replicaId, long generation,
                    long leaseTtlMillis) {
        try {
            CompletionStage<Void> release;
            try {
                release = loop.submit(leave).get(1, TimeUnit.SECONDS);
            } catch (RejectedExecutionException e) {
                release = leave.call();
            }
            release.toCompletableFuture().get(1, TimeUnit.SECONDS);
            log.info("coordination left replica_id={} generation={}", replicaId, generation);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) { // Redis's answer, the wait, or the leave itself when called here
            log.warn("coordination leave failed replica_id={} reason=\"{}\" lease_expires_in_ms={}", replicaId, e,
                    leaseTtlMillis);
        }
    }
}
