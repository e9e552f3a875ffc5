package dev.sluice.gateway.config;

import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * The one declaration of how a change to each part of the configuration takes effect on reload:
 * {@link ReloadPlan} computes what a reload applies and what waits for a restart from it, and a test
 * holds {@code docs/operations.md} ("Live reload") to it. A section not listed here cannot be
 * reloaded without the reload silently ignoring it, which is why {@code ConfigSectionTest} checks
 * that every component of {@link GatewayConfig} has one.
 *
 * <p>Declared in the order reports list them (the restart-only sections, then the live ones), which
 * is also the order {@code applied} and {@code restart_required} have always had.
 */
public enum ConfigSection {
    LISTEN("listen", Effect.RESTART, GatewayConfig::listen, (b, from) -> b.listen(from.listen())),
    DISAGGREGATION("disaggregation", Effect.RESTART, GatewayConfig::disaggregation,
            (b, from) -> b.disaggregation(from.disaggregation())),
    HTTP("http", Effect.RESTART, GatewayConfig::http, (b, from) -> b.http(from.http())),
    UPSTREAM("upstream", Effect.RESTART, GatewayConfig::upstream, (b, from) -> b.upstream(from.upstream())),
    TELEMETRY("telemetry", Effect.RESTART, GatewayConfig::telemetry, (b, from) -> b.telemetry(from.telemetry())),
    ADMIN("admin", Effect.RESTART, GatewayConfig::admin, (b, from) -> b.admin(from.admin())),
    /** The Redis connection and this replica's identity are made once at start. */
    COORDINATION("coordination", Effect.RESTART, GatewayConfig::coordination,
            (b, from) -> b.coordination(from.coordination())),
    /** The routing policies hold per-worker state (prefix trees) built for the running choice. */
    ROUTING("routing", Effect.RESTART, GatewayConfig::routing, (b, from) -> b.routing(from.routing())),
    /** All of {@code admission:} but its tokenizer, which the next line takes out. */
    ADMISSION("admission", Effect.LIVE, GatewayConfig::admission, (b, from) -> b.admission(from.admission())),
    /** The tokenizer pool and its loaded tokenizer.json are built once at start. */
    ADMISSION_TOKENIZER("admission.tokenizer", Effect.RESTART, c -> c.admission().tokenizer(),
            (b, from) -> b.admission(b.admission().toBuilder().tokenizer(from.admission().tokenizer()).build())),
    /**
     * Gateway-wide, applied once by the server's reload (not by a pool's): a new exporter is made ready before
     * the rest applies; requests in flight finish under the setting they started with.
     */
    TRACING("tracing", Effect.LIVE, GatewayConfig::tracing, (b, from) -> b.tracing(from.tracing())),
    HEALTH("health", Effect.LIVE, GatewayConfig::health, (b, from) -> b.health(from.health())),
    TIMEOUTS("timeouts", Effect.LIVE, GatewayConfig::timeouts, (b, from) -> b.timeouts(from.timeouts())),
    RETRIES("retries", Effect.LIVE, GatewayConfig::retries, (b, from) -> b.retries(from.retries())),
    LOGGING("logging", Effect.LIVE, GatewayConfig::requestLogging,
            (b, from) -> b.requestLogging(from.requestLogging())),
    /** Live within a mode: other lists under another disaggregation wait for it, at the next start. */
    WORKERS("workers", Effect.LIVE_WITHIN_MODE, GatewayConfig::workers, (b, from) -> b.workers(from.workers())),
    /**
     * The model pools (and default_pool): each pool's own sections change live as the sections above do (the
     * server reloads every pool by its view); a pool added is built and started, a pool removed drains and
     * closes (the server's {@code PoolsReconfiguration}); removing the default pool, or changing a kept pool's
     * models or protocol, is refused by the server (they need a restart).
     */
    POOLS("pools", Effect.LIVE, GatewayConfig::pools, (b, from) -> b.pools(from.pools()));

    /** How a changed section takes effect. */
    public enum Effect {
        /** At once, on reload. */
        LIVE,
        /** On reload while {@code disaggregation} stays the same; with another mode, at the next start. */
        LIVE_WITHIN_MODE,
        /** At the next start; until then the running value stays. */
        RESTART
    }

    private final String key;
    private final Effect effect;
    private final Function<GatewayConfig, Object> value;
    private final BiConsumer<GatewayConfig.Builder, GatewayConfig> take;

    /**
     * {@code take} sets this section in a builder to its value in another configuration; a part of a
     * section ({@code admission.tokenizer}) is set inside the value its parent, declared before it,
     * already has in the builder.
     */
    ConfigSection(String key, Effect effect, Function<GatewayConfig, Object> value,
                  BiConsumer<GatewayConfig.Builder, GatewayConfig> take) {
        this.key = key;
        this.effect = effect;
        this.value = value;
        this.take = take;
    }

    /** The YAML key ({@code "admission.tokenizer"}), also the name in {@code applied} and {@code restart_required}. */
    public String key() {
        return key;
    }

    public Effect effect() {
        return effect;
    }

    /** This section's value in {@code config}. */
    public Object valueIn(GatewayConfig config) {
        return value.apply(config);
    }

    /** Whether a change to this section from {@code current} to {@code next} is put in force by a reload. */
    public boolean live(GatewayConfig current, GatewayConfig next) {
        return switch (effect) {
            case LIVE -> true;
            case LIVE_WITHIN_MODE -> current.disaggregation() == next.disaggregation();
            case RESTART -> false;
        };
    }

    /** Sets this section in {@code builder} as it is in {@code from} (nothing when they already agree). */
    void takeFrom(GatewayConfig.Builder builder, GatewayConfig from) {
        take.accept(builder, from);
    }
}
