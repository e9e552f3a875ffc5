package dev.sluice.gateway.state;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.background.BackgroundTasks;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The measured prefill rates kept where they survive a restart, so that admission has a rate (and its
 * deadline checks) from a new process's first request: in the state file ({@link StateDirectory}; written
 * every 30 s and at the stop) and, with coordination on, in Redis ({@link PrefillRateStore}), where every
 * replica writes what it measured and reads what the others did every {@link #SHARE_EVERY}: a replica
 * started later, or a rolled pod whose disk died with it, starts with them. Where both hold a worker's
 * rate the newer measurement counts. The rates given to admission are priors: its own measurement of a
 * worker replaces them.
 *
 * <p>Touched on the file IO thread only, after {@link #start} (which runs on the starting thread before
 * any task is scheduled); Redis answers hop onto it. Nothing here can fail a start: an unwritable file
 * is one warning, and Redis down means no priors from it.
 */
public final class KeptPrefillRates {
    private static final Logger log = LoggerFactory.getLogger(KeptPrefillRates.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** How often the file is written. */
    static final Duration SAVE_EVERY = Duration.ofSeconds(30);
    /** How often the rates are written to and read from Redis: one HSET and one HGETALL per replica. */
    static final Duration SHARE_EVERY = Duration.ofSeconds(2);

    private final Consumer<Map<String, Double>> priors;
    private final Supplier<Map<String, Double>> measured;
    private final Supplier<Optional<Path>> stateFile;
    private final Optional<PrefillRateStore> store;
    private final Duration storeWait;
    private final ScheduledExecutorService fileIo;
    private final BackgroundTasks background;
    private Map<String, SavedRate> fromFile = Map.of();
    private Map<String, SavedRate> fromStore = Map.of();
    private Path unwritable; // the file found unwritable at start: not tried again this run

    /**
     * @param priors    gives admission the kept rates (its {@code savedRates})
     * @param measured  what admission has measured itself, by worker URL
     * @param stateFile the state file as configured now (a reload may change it)
     * @param store     Redis, with coordination on
     * @param storeWait how long a start waits for Redis's answer
     */
    public KeptPrefillRates(Consumer<Map<String, Double>> priors, Supplier<Map<String, Double>> measured,
                            Supplier<Optional<Path>> stateFile, Optional<PrefillRateStore> store, Duration storeWait,
                            ScheduledExecutorService fileIo, BackgroundTasks background) {
        this.priors = Objects.requireNonNull(priors, "priors");
        this.measured = Objects.requireNonNull(measured, "measured");
        this.stateFile = Objects.requireNonNull(stateFile, "stateFile");
        this.store = Objects.requireNonNull(store, "store");
        this.storeWait = Objects.requireNonNull(storeWait, "storeWait");
        this.fileIo = Objects.requireNonNull(fileIo, "fileIo");
        this.background = Objects.requireNonNull(background, "background");
    }

    /** Reads the kept rates (Redis bounded by {@code storeWait}), gives them to admission, starts the saves. */
    public void start() {
        Instant now = Instant.now();
        Optional<Path> file = stateFile.get();
        file.ifPresent(f -> {
            if (!writable(f)) {
                unwritable = f;
                log.warn("prefill rate state file not writable file={} why=\"the measured rates are not kept across "
                        + "restarts in a file; set admission.prefill_rate.state_file or SLUICE_STATE_DIRECTORY to a "
                        + "writable place, or none\"", f);
            }
            fromFile = PrefillRateFile.entries(f, now);
        });
        store.ifPresent(s -> {
            try {
                fromStore = parse(s.readPrefillRates().toCompletableFuture()
                        .get(storeWait.toMillis(), TimeUnit.MILLISECONDS), now);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                log.warn("prefill rates not read from redis detail=\"{}\" (read again every {} s)", e.toString(),
                        SHARE_EVERY.toSeconds());
            }
        });
        Map<String, SavedRate> kept = SavedRate.newest(fromFile, fromStore);
        if (!kept.isEmpty()) {
            priors.accept(SavedRate.rates(kept));
        }
        log.info("prefill rates kept file={} redis={} workers={}", file.map(Path::toString).orElse("none"),
                store.isPresent(), kept.keySet());
        if (file.isPresent()) {
            background.every("prefill_rate_save", fileIo, SAVE_EVERY, this::saveFile);
        }
        store.ifPresent(s -> background.every("prefill_rate_share", fileIo, SHARE_EVERY, () -> share(s)));
    }

    /** The last save, at the stop: on the file IO thread after its periodic tasks stopped; Redis bounded. */
    public void saveAtStop() {
        saveFile();
        store.ifPresent(s -> {
            try {
                s.writePrefillRates(entries(measured.get(), Instant.now())).toCompletableFuture()
                        .get(storeWait.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                log.warn("prefill rates not written to redis at stop detail=\"{}\"", e.toString());
            }
        });
    }

    private void saveFile() {
        stateFile.get().filter(f -> !f.equals(unwritable))
                .ifPresent(f -> PrefillRateFile.write(f, measured.get(), Instant.now()));
    }

    /** Writes what this replica measured, then reads the fleet's and gives admission the newest. */
    private void share(PrefillRateStore s) {
        Instant now = Instant.now();
        s.writePrefillRates(entries(measured.get(), now)).toCompletableFuture()
                .exceptionally(e -> {
                    log.debug("prefill rates not written to redis detail=\"{}\"", e.toString());
                    return null;
                })
                .thenCompose(v -> s.readPrefillRates())
                .whenComplete((raw, e) -> {
                    if (e != null) {
                        log.debug("prefill rates not read from redis detail=\"{}\"", e.toString());
                        return;
                    }
                    try {
                        fileIo.execute(() -> {
                            fromStore = parse(raw, Instant.now());
                            priors.accept(SavedRate.rates(SavedRate.newest(fromFile, fromStore)));
                        });
                    } catch (RejectedExecutionException stopped) {
                        // the gateway stops: nothing more to learn
                    }
                });
    }

    private static Map<String, String> entries(Map<String, Double> rates, Instant now) {
        Map<String, String> out = new HashMap<>();
        rates.forEach((url, r) -> out.put(url, new SavedRate(r, now).toJson().toString()));
        return out;
    }

    private static Map<String, SavedRate> parse(Map<String, String> raw, Instant now) {
        Map<String, SavedRate> out = new HashMap<>();
        raw.forEach((url, json) -> {
            try {
                SavedRate.of(JSON.readTree(json), now).ifPresent(r -> out.put(url, r));
            } catch (IOException e) {
                log.debug("prefill rate entry in redis unreadable worker={}", url);
            }
        });
        return out;
    }

    /** Whether {@code file} can be written: its directory exists (made if need be) and is writable. */
    static boolean writable(Path file) {
        Path dir = file.toAbsolutePath().getParent();
        try {
            Files.createDirectories(dir);
        } catch (IOException | RuntimeException e) {
            return false;
        }
        return Files.isWritable(dir) && (!Files.exists(file) || Files.isWritable(file));
    }
}
