package dev.sluice.gateway.server;

import dev.sluice.gateway.state.KeptPrefillRates;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
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
