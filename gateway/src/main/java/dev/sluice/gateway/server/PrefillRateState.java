package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.coordination.RedisLeaseStore;
import dev.sluice.gateway.state.KeptPrefillRates;
import dev.sluice.gateway.state.PrefillRateStore;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The measured prefill rates kept across restarts (the state file and, with coordination, Redis):
 * read at start, saved periodically and once more at shutdown, always on the file IO thread (one
 * writer of the file at a time, never an event loop).
 */
final class PrefillRateState {
    private static final Logger log = LoggerFactory.getLogger(PrefillRateState.class);

    private final KeptPrefillRates kept;
    private final ScheduledExecutorService fileIo;
    private volatile boolean started;

    PrefillRateState(KeptPrefillRates kept, ScheduledExecutorService fileIo) {
        this.kept = kept;
        this.fileIo = fileIo;
    }

    /** The rates kept in the state file (as configured now) and, with coordination, in the fleet's Redis. */
    static PrefillRateState of(Supplier<GatewayConfig> config, AdmissionController admission,
                               Optional<RedisLeaseStore> redis, ScheduledExecutorService fileIo,
                               BackgroundTasks background) {
        Duration storeWait = config.get().coordination().map(cc -> cc.leaseTtl()).orElse(Duration.ZERO);
        return new PrefillRateState(new KeptPrefillRates(admission::savedRates, admission::measuredRates,
                () -> config.get().admission().prefillRate().stateFile(), redis.map(r -> (PrefillRateStore) r),
                storeWait, fileIo, background), fileIo);
    }

    /** Gives admission the kept rates as priors and starts the periodic saves. */
    void start() {
        started = true;
        kept.start(); // the measured rates a previous run (or another replica) kept: priors from the first request
    }

    /**
     * The last save runs on the file IO thread after its periodic save stopped (the background tasks
     * are closed first), then the thread ends.
     */
    void close() {
        if (started) {
            fileIo.execute(kept::saveAtStop);
        }
        fileIo.shutdown();
        try {
            if (!fileIo.awaitTermination(5, TimeUnit.SECONDS)) {
                log.warn("file io thread still busy at shutdown wait_seconds=5");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
