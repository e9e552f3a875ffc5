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
import java.util.function.Supplier;

/**
 * The measured prefill rates kept across restarts (the state file and, with coordination, Redis):
 * read at start, saved periodically and once more at shutdown, always on the file IO thread (one
 * writer of the file at a time, never an event loop).
 */
final class PrefillRateState {
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
        return of(config, admission, redis, fileIo, background, null);
    }

    /**
     * ... for a model pool: {@code pool} null for the default pool (its file as configured), else the pool's
     * name, put before the file's extension ({@code prefill-rates.json} becomes {@code prefill-rates.small.json}):
     * pools never write over each other's rates.
     */
    static PrefillRateState of(Supplier<GatewayConfig> config, AdmissionController admission,
                               Optional<RedisLeaseStore> redis, ScheduledExecutorService fileIo,
                               BackgroundTasks background, String pool) {
        Duration storeWait = config.get().coordination().map(cc -> cc.leaseTtl()).orElse(Duration.ZERO);
        return new PrefillRateState(new KeptPrefillRates(admission::savedRates, admission::measuredRates,
                () -> config.get().admission().prefillRate().stateFile().map(p -> pool == null ? p : ofPool(p, pool)),
                redis.map(r -> (PrefillRateStore) r), storeWait, fileIo, background), fileIo);
    }

    static java.nio.file.Path ofPool(java.nio.file.Path file, String pool) {
        String name = file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        return file.resolveSibling(dot > 0 ? name.substring(0, dot) + "." + pool + name.substring(dot)
                : name + "." + pool);
    }

    /** Gives admission the kept rates as priors and starts the periodic saves. */
    void start() {
        started = true;
        kept.start(); // the measured rates a previous run (or another replica) kept: priors from the first request
    }

    /**
     * The last save runs on the file IO thread after its periodic save stopped (the background tasks
     * are closed first); {@link ServerLoops#closeFileIo} then waits for it.
     */
    void close() {
        if (started) {
            fileIo.execute(kept::saveAtStop);
        }
    }
}
