package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.pd.InFlight;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Graceful drain (SIGTERM): admit nothing new (503 draining, readiness 503), let queued and
 * in-flight requests finish for up to the grace period, then reject what is still queued and
 * abort what is still running, both halves. Runs on the shutdown thread, never on a loop.
 */
final class GatewayDrain {
    private static final Logger log = LoggerFactory.getLogger(GatewayDrain.class);

    private final AdmissionController admission;
    private final Set<InFlight> live;
    private volatile boolean draining;

    GatewayDrain(AdmissionController admission, Set<InFlight> live) {
        this.admission = admission;
        this.live = live;
    }

    boolean draining() {
        return draining;
    }

    void drain(Duration grace) throws InterruptedException {
        draining = true;
        admission.drain();
        long deadline = System.nanoTime() + grace.toNanos();
        log.info("draining queued={} in_flight={} grace_ms={}", admission.snapshot().queued(), live.size(),
                grace.toMillis());
        while (System.nanoTime() < deadline && !(live.isEmpty() && admission.snapshot().idle())) {
            Thread.sleep(20); // the shutdown thread polls; nothing else waits on it
        }
        AdmissionSnapshot left = admission.snapshot();
        if (!live.isEmpty() || !left.idle()) {
            log.warn("drain grace over: rejecting queued={} aborting in_flight={}", left.queued(), live.size());
            admission.rejectQueued(RejectReason.DRAINING, "the gateway shut down before this request was served");
            for (InFlight ex : List.copyOf(live)) {
                ex.abortOnDrain();
            }
            long hard = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (!live.isEmpty() && System.nanoTime() < hard) {
                Thread.sleep(10);
            }
        }
        log.info("drained in_flight={}", live.size());
    }
}
