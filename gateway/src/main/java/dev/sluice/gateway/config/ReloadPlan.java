package dev.sluice.gateway.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a reload does, derived from {@link ConfigSection}: the configuration to run from now on
 * ({@code next}'s sections that take effect live, the running ones for the rest, with the running
 * tokenizer inside the new admission), the live sections that changed (to put in force), and the
 * sections that differ but wait for a restart (to report).
 *
 * @param config          the configuration to run: what {@code GatewayServer} holds after the reload
 * @param applied         live sections whose value in {@code config} differs from the running one
 * @param restartRequired sections whose new value is not in {@code config}: the next start applies them
 */
public record ReloadPlan(GatewayConfig config, List<ConfigSection> applied, List<ConfigSection> restartRequired) {

    public ReloadPlan {
        Objects.requireNonNull(config, "config");
        applied = List.copyOf(applied);
        restartRequired = List.copyOf(restartRequired);
    }

    /** The plan for replacing {@code current}, the running configuration, by {@code next}, a validated file. */
    public static ReloadPlan of(GatewayConfig current, GatewayConfig next) {
        Objects.requireNonNull(current, "current");
        Objects.requireNonNull(next, "next");
        GatewayConfig.Builder merged = next.toBuilder();
        List<ConfigSection> restart = new ArrayList<>();
        for (ConfigSection s : ConfigSection.values()) {
            if (!s.live(current, next) && !Objects.equals(s.valueIn(current), s.valueIn(next))) {
                s.takeFrom(merged, current);
                restart.add(s);
            }
        }
        GatewayConfig config = restart.isEmpty() ? next : merged.build();
        List<ConfigSection> applied = new ArrayList<>();
        for (ConfigSection s : ConfigSection.values()) {
            if (s.live(current, next) && !Objects.equals(s.valueIn(current), s.valueIn(config))) {
                applied.add(s);
            }
        }
        return new ReloadPlan(config, applied, restart);
    }

    /** Whether the reload changes {@code section} now. */
    public boolean applies(ConfigSection section) {
        return applied.contains(section);
    }

    /** {@link #applied}'s keys, as reported ({@code ["admission", "workers"]}). */
    public List<String> appliedKeys() {
        return applied.stream().map(ConfigSection::key).toList();
    }

    /** {@link #restartRequired}'s keys, as reported ({@code ["listen", "admission.tokenizer"]}). */
    public List<String> restartRequiredKeys() {
        return restartRequired.stream().map(ConfigSection::key).toList();
    }
}
