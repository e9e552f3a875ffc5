package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.admin.AdminServer;
import dev.sluice.gateway.admin.StateView;
import dev.sluice.gateway.config.ConfigOverrides;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * Where a reload comes in (SIGHUP, the file watch, {@code POST /admin/reload}) and what it tells the
 * admin views: builds the {@link ConfigReload} over the server's {@link Reconfigurable}, hands it
 * to the admin listener and keeps {@code /admin/state}'s {@code "config"} object current.
 */
final class ReloadEntry implements AutoCloseable {
    private final Reconfigurable reconfiguration;
    private final MeterRegistry registry;
    private Supplier<JsonNode> configInfo;
    private StateView stateView;
    private AdminServer adminServer;
    private ConfigReload reload;

    ReloadEntry(Reconfigurable reconfiguration, MeterRegistry registry) {
        this.reconfiguration = reconfiguration;
        this.registry = registry;
    }

    /** The admin listener and its state view, once started (either may come before or after the reload). */
    synchronized void admin(AdminServer server, StateView view) {
        this.adminServer = server;
        this.stateView = view.configInfo(configInfo);
        if (reload != null) {
            ConfigReload r = reload;
            server.onReload(() -> r.reload("admin_api").toJson());
        }
    }

    /** Where {@code /admin/state} gets its {@code "config"} object (set by {@link ConfigReload}). */
    private synchronized void configInfo(Supplier<JsonNode> info) {
        this.configInfo = info;
        if (stateView != null) {
            stateView.configInfo(info);
        }
    }

    /** Reload from {@code file} only when asked ({@link ConfigReload#reload}): no watch, no signal (tests). */
    ConfigReload reloader(Path file) {
        return new ConfigReload(reconfiguration, registry, this::configInfo, file, ConfigOverrides.none());
    }

    /** With the start-up's overrides applied to every reload too; a watch on the file, SIGHUP when asked. */
    synchronized ConfigReload reloadFrom(Path file, ConfigOverrides overrides, boolean sighup) throws IOException {
        ConfigReload r = new ConfigReload(reconfiguration, registry, this::configInfo, file, overrides).watch();
        if (sighup) {
            r.onSighup();
        }
        reload = r;
        if (adminServer != null) {
            adminServer.onReload(() -> r.reload("admin_api").toJson());
        }
        return r;
    }

    @Override
    public synchronized void close() {
        if (reload != null) {
            reload.close();
        }
    }
}
