package dev.sluice.gateway.cli;

import dev.sluice.gateway.cacheview.KvViewCapacity;
import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.LoadedConfig;
import dev.sluice.gateway.server.GatewayServer;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import sun.misc.Signal;
import sun.misc.SignalHandler;
import picocli.CommandLine.Option;

/** {@code serve --config FILE [--set KEY=VALUE]...}: runs the gateway until SIGTERM or Ctrl-C. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Run the gateway with the given YAML configuration until SIGTERM/Ctrl-C.")
public final class ServeCommand implements Callable<Integer> {
    @Mixin
    ConfigOptions source = new ConfigOptions();

    @Option(names = "--check", description = "validate the configuration, print it, and exit (as check-config, "
            + "but an invalid one exits 2)")
    boolean check;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        LoadedConfig loaded = source.load(spec.commandLine().getErr(), "invalid configuration");
        if (loaded == null) {
            return 2;
        }
        GatewayConfig cfg = loaded.config();
        Path config = source.file();
        if (check) {
            source.printEffective(spec.commandLine().getOut(), loaded);
            return 0;
        }
        // the KV view's worst case must fit this JVM's heap: refused now, not an OutOfMemoryError later
        java.util.Optional<String> capacity = KvViewCapacity.problem(cfg, Runtime.getRuntime().maxMemory());
        if (capacity.isPresent()) {
            System.err.println("sluice-gateway: invalid configuration: " + capacity.get());
            return 2;
        }
        GatewayServer server;
        try {
            server = new GatewayServer(cfg);
        } catch (ConfigException e) {
            System.err.println("sluice-gateway: invalid configuration: " + e.getMessage());
            return 2;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        // SIGTERM/Ctrl-C: drain, then exit 0 (a plain shutdown hook would exit 143 after a kill)
        Thread stopper = new Thread(() -> {
            try {
                server.drain(cfg.admission().drainGrace());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                server.close();
                stopped.countDown();
            }
        }, "sluice-drain");
        // a stop signal can arrive twice at once (Ctrl-C and the TERM a supervisor sends): one stop only
        java.util.concurrent.atomic.AtomicBoolean stopping = new java.util.concurrent.atomic.AtomicBoolean();
        SignalHandler onSignal = sig -> {
            if (stopping.compareAndSet(false, true)) {
                stopper.start();
                StopWatchdog.start(stopper, stopped, cfg.admission().drainGrace().plus(StopWatchdog.MARGIN));
            }
        };
        Signal.handle(new Signal("TERM"), onSignal);
        Signal.handle(new Signal("INT"), onSignal);
        try {
            server.start();
            // live reload: the file is watched, SIGHUP (systemd ExecReload) and POST /admin/reload reload it
            server.reloadFrom(config, source.overrides(), true);
        } catch (Exception e) {
            System.err.println("sluice-gateway: cannot start: " + e);
            return 1;
        }
        stopped.await();
        return 0;
    }
}
