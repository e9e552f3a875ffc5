package dev.sluice.gateway.server;

import dev.sluice.gateway.config.GatewayConfig;

/** What a reload puts its validated configuration into: one pool's settings, or every pool's. */
interface Reconfigurable {
    /**
     * Puts {@code next}'s live settings in force.
     *
     * @throws IllegalArgumentException when a change cannot be applied live (nothing was changed)
     */
    AppliedChanges apply(GatewayConfig next);
}
