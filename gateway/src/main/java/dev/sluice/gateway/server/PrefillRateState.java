package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.PrefillRateFile;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.config.GatewayConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The measured prefill rates kept across restarts ({@code admission.prefill_rate.state_file}): read at
 * start, saved every 30 s and once more at shutdown, always on the file IO thread (one writer of the
 * file at a time, never an event loop).
 */
final class PrefillRateState {
    private static final Logger log = LoggerFactory.getLogger(PrefillRateState.class);

    private final Supplier<GatewayConfig> config;
    private final AdmissionController admission;
    private final ScheduledExecutorService fileIo;
    private volatile boolean started;

    PrefillRateState(Supplier<GatewayConfig> config, AdmissionController admission, ScheduledExecutorService fileIo) {
        this.config = config;
        this.admission = admission;
        this.fileIo = fileIo;
    }

    /** Loads the saved rates (when a state file is configured) and starts the periodic save. */
    void start(BackgroundTasks background) {
        started = true;
        config.get().admission().prefillRate().stateFile().ifPresent(file -> {
            admission.savedRates(PrefillRateFile.read(file, Instant.now()));
            background.every("prefill_rate_save", fileIo, Duration.ofSeconds(30), this::save);
        });
    }

    /** The measured prefill rates into the state file (as configured now), for the next start. */
    private void save() {
        config.get().admission().prefillRate().stateFile().ifPresent(file ->
                PrefillRateFile.write(file, admission.measuredRates(), Instant.now()));
    }

    /**
     * The last save runs on the file IO thread after its periodic save stopped (the background tasks
     * are closed first), then the thread ends.
     */
    void close() {
        if (started) {
            fileIo.execute(this::save);
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
