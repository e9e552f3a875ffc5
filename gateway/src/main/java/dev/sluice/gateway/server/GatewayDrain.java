package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.pd.InFlight;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Graceful drain (SIGTERM): admit nothing new (503 draining, readiness 503), let queued and
 * in-flight requests finish for up to the grace period, then reject what is still queued and
 * abort what is still running, both halves. Runs on the shutdown thread, never on a loop.
 */
final class GatewayDrain {
    private static final Logger log = LoggerFactory.getLogger(GatewayDrain.class);

    private final Supplier<List<AdmissionController>> admissions; // one per model pool serving now
    private final Set<InFlight> live;
    private volatile boolean draining;

    GatewayDrain(Supplier<List<AdmissionController>> admissions, Set<InFlight> live) {
        this.admissions = admissions;
        this.live = live;
    }

    boolean draining() {
        return draining;
    }

    void drain(Duration grace) throws InterruptedException {
        draining = true;
        admissions.get().forEach(AdmissionController::drain);
        long deadline = System.nanoTime() + grace.toNanos();
        log.info("draining queued={} in_flight={} grace_ms={}", queued(), live.size(),
                grace.toMillis());
        while (System.nanoTime() < deadline && !(live.isEmpty() && idle())) {
            Thread.sleep(20); // the shutdown thread polls; nothing else waits on it
        }
        if (!live.isEmpty() || !idle()) {
            log.warn("drain grace over: rejecting queued={} aborting in_flight={}", queued(), live.size());
            admissions.get().forEach(a -> a.rejectQueued(RejectReason.DRAINING,
                    "the gateway shut down before this request was served"));
            for (InFlight ex : List.copyOf(live)) {
                ex.abortOnDrain("the gateway shut down before this request finished");
            }
            long hard = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (!live.isEmpty() && System.nanoTime() < hard) {
                Thread.sleep(10);
            }
        }
        log.info("drained in_flight={}", live.size());
    }

    private boolean idle() {
        return admissions.get().stream().allMatch(a -> a.snapshot().idle());
    }

    private int queued() {
        return admissions.get().stream().mapToInt(a -> a.snapshot().queued()).sum();
    }
}
