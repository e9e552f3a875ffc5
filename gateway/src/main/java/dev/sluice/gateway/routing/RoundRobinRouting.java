package dev.sluice.gateway.routing;

import java.util.List;

/**
 * {@code round_robin}: the candidates in turn, ignoring load and prefixes (the gateway's
 * behaviour before routing policies). Admission only offers workers with window room, so a full
 * worker is skipped rather than waited for.
 */
public final class RoundRobinRouting implements RoutingPolicy {
    public static final String NAME = "round_robin";
    public static final String REASON = "round_robin";

    private int cursor;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Choice choose(List<Worker> candidates, RoutingRequest request, LoadView load) {
        return new Choice(candidates.get(Math.floorMod(cursor++, candidates.size())), REASON);
    }
}
