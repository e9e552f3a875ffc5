package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigWarnings;
import dev.sluice.gateway.config.GatewayConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * Live reload of the configuration file: on a change of the file (watched), on SIGHUP (systemd's
 * {@code ExecReload}), and on {@code POST /admin/reload}. One reload at a time. The file is read
 * and validated whole first; a file that does not validate, or asks for a change that cannot be
 * made live in a consistent way, is refused with its errors (logged, returned, counted) and the
 * running configuration stays whole. Otherwise {@link LiveReconfiguration#apply} puts the reloadable
 * settings in force at once (see docs/operations.md: admission limits, API keys and default
 * priority, timeouts and retries, health settings, the worker lists) and names the rest as needing
 * a restart.
 *
 * <p>Metrics: {@code sluice_config_reloads_total{result}} (applied, unchanged, invalid) and
 * {@code sluice_config_info{hash}} = 1 for the running file's hash.
 */
public final class ConfigReload implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ConfigReload.class);
    private static final long DEBOUNCE_MS = 200;

    private final Reconfigurable target;
    private final MeterRegistry registry;
    private final Path file;
    private final ConfigOverrides overrides;
    private final Map<String, Counter> reloads = new HashMap<>();
    private String runningHash;
    private Meter info;
    private volatile ReloadResult last;
    private volatile Instant lastAt;
    private WatchService watchService;
    private Thread watcher;

    /**
     * {@code file} is the one the running configuration was read from; {@code overrides}, the
     * start-up's environment and {@code --set} overrides, are applied again to every reload;
     * {@code stateView} is told where {@code /admin/state} reads the reload's state.
     */
    ConfigReload(Reconfigurable target, MeterRegistry registry, Consumer<Supplier<JsonNode>> stateView, Path file,
                 ConfigOverrides overrides) {
        this.target = target;
        this.registry = registry;
        this.file = file.toAbsolutePath();
        this.overrides = overrides;
        for (String r : ReloadResult.RESULTS) {
            reloads.put(r, Counter.builder("sluice.config.reloads").tag("result", r)
                    .description("configuration reloads, by result (applied, unchanged, invalid)")
                    .register(registry));
        }
        String text;
        try {
            text = Files.readString(this.file);
        } catch (IOException e) {
            text = "";
        }
        publishHash(hash(text));
        stateView.accept(this::state);
    }

    /** Reads, validates and applies the file; never throws. Safe from any thread but an event loop (it reads a file). */
    public synchronized ReloadResult reload(String trigger) {
        ReloadResult r = doReload(trigger);
        reloads.get(r.result()).increment();
        last = r;
        lastAt = Instant.now();
        if (r.ok()) {
            log.info("config reload trigger={} result={} hash={} applied={} restart_required={}", trigger, r.result(),
                    r.hash(), r.applied(), r.restartRequired());
        } else {
            log.warn("config reload trigger={} result=invalid hash={} kept_hash={} error=\"{}\"", trigger, r.hash(),
                    runningHash, r.error());
        }
        return r;
    }

    private ReloadResult doReload(String trigger) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            return new ReloadResult("invalid", trigger, runningHash, "cannot read " + file + ": " + e, List.of(), List.of());
        }
        String hash = hash(text);
        if (hash.equals(runningHash)) {
            return new ReloadResult("unchanged", trigger, hash, null, List.of(), List.of());
        }
        GatewayConfig next;
        try {
            next = ConfigLoader.parse(text, file.toString(), overrides);
        } catch (ConfigException e) {
            return new ReloadResult("invalid", trigger, hash, e.getMessage(), List.of(), List.of());
        }
        AppliedChanges applied;
        try {
            applied = target.apply(next);
        } catch (IllegalArgumentException | ConfigException e) {
            return new ReloadResult("invalid", trigger, hash, e.getMessage(), List.of(), List.of());
        }
        publishHash(hash);
        for (String w : ConfigWarnings.of(next)) {
            log.warn("config warning {}", w);
        }
        return new ReloadResult("applied", trigger, hash, null, applied.applied(), applied.restartRequired());
    }

    /**
     * SIGHUP reloads (systemd: {@code ExecReload=/bin/kill -HUP $MAINPID}); the reload runs on its own
     * thread. A process started with SIGHUP ignored ({@code nohup}, some supervisors) inherits that,
     * and the JVM then keeps it ignored without a word: said in the log, so that an operator whose
     * {@code kill -HUP} does nothing knows why and what else reloads.
     */
    public ConfigReload onSighup() {
        sun.misc.SignalHandler before = Signal.handle(new Signal("HUP"), s -> {
            Thread t = new Thread(() -> reload("sighup"), "sluice-reload");
            t.setDaemon(true);
            t.start();
        });
        if (before == sun.misc.SignalHandler.SIG_IGN) {
            log.warn("SIGHUP is ignored by this process (inherited from whatever started it, e.g. nohup): kill -HUP "
                    + "will not reload; the file watch and POST /admin/reload still do");
        }
        return this;
    }

    /**
     * Watches the file's directory (editors and config management replace files by renaming, and
     * Kubernetes swaps a symlink): any event there, once quiet for 200 ms, reloads; an unchanged
     * hash makes that a no-op.
     */
    public ConfigReload watch() throws IOException {
        watchService = FileSystems.getDefault().newWatchService();
        file.getParent().register(watchService, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY,
                StandardWatchEventKinds.ENTRY_DELETE);
        watcher = new Thread(this::watchLoop, "sluice-config-watch");
        watcher.setDaemon(true);
        watcher.start();
        return this;
    }

    private void watchLoop() {
        try {
            while (true) {
                WatchKey key = watchService.take();
                boolean ours = key.pollEvents().stream().anyMatch(e -> e.context() instanceof Path p
                        && (p.getFileName().equals(file.getFileName()) || p.toString().startsWith("..")));
                key.reset();
                if (!ours) {
                    continue;
                }
                // let the writer finish: drain the events of the next quiet period
                WatchKey more;
                while ((more = watchService.poll(DEBOUNCE_MS, java.util.concurrent.TimeUnit.MILLISECONDS)) != null) {
                    more.pollEvents();
                    more.reset();
                }
                if (Files.exists(file)) {
                    reload("file_watch");
                }
            }
        } catch (InterruptedException | ClosedWatchServiceException e) {
            // closed
        }
    }

    /** The {@code "config"} object of {@code /admin/state}. */
    JsonNode state() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("file", file.toString()).put("hash", runningHash);
        ReloadResult r = last;
        if (r != null) {
            ObjectNode lr = r.toJson();
            lr.put("at", String.valueOf(lastAt));
            o.set("last_reload", lr);
        }
        return o;
    }

    private synchronized void publishHash(String hash) {
        runningHash = hash;
        if (info != null) {
            registry.remove(info);
        }
        info = Gauge.builder("sluice.config.info", () -> 1).tag("hash", hash)
                .description("the running configuration file's hash (SHA-256, first 12 hex digits); value 1")
                .register(registry);
    }

    static String hash(String text) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(d).substring(0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        if (watchService != null) {
            try {
                watchService.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}
