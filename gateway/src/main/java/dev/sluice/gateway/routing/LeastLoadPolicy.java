package dev.sluice.gateway.routing;

import java.util.List;

/**
 * {@code least_load}: the candidate with the smallest load as {@link WorkerLoad} scores it
 * (prefill: pending prompt tokens in the gateway's window plus the worker's own queue beyond it;
 * decode: in-flight streams weighted by KV usage). Equal candidates are taken in turn, so that
 * idle workers alternate instead of the first one in the config getting everything.
 */
public final class LeastLoadPolicy implements RoutingPolicy {
    public static final String NAME = "least_load";
    public static final String REASON = "least_load";

    private final WorkerLoad load;
    private int cursor;

    public LeastLoadPolicy(WorkerRole role) {
        this.load = new WorkerLoad(role);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Choice choose(List<Worker> candidates, RoutingRequest request, LoadView view) {
        int i = WorkerLoad.argMin(load.scores(candidates, request, view), cursor);
        cursor = i + 1;
        return new Choice(candidates.get(i), REASON);
    }
}
