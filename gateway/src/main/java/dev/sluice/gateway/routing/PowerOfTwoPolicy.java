package dev.sluice.gateway.routing;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;

/**
 * {@code power_of_two}: two distinct candidates at random, the less loaded one wins (load as
 * {@link WorkerLoad} scores it). Nearly as good as least_load with fresh numbers, and it does not
 * herd every request onto one worker when the numbers lag (telemetry is polled, not live).
 */
public final class PowerOfTwoPolicy implements RoutingPolicy {
    public static final String NAME = "power_of_two";
    public static final String REASON = "power_of_two";

    private final WorkerLoad load;
    private final Supplier<? extends RandomGenerator> random;

    public PowerOfTwoPolicy(WorkerRole role) {
        this(role, ThreadLocalRandom::current);
    }

    /** With a given source of randomness (tests use a seeded one). */
    PowerOfTwoPolicy(WorkerRole role, Supplier<? extends RandomGenerator> random) {
        this.load = new WorkerLoad(role);
        this.random = Objects.requireNonNull(random, "random");
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Choice choose(List<Worker> candidates, RoutingRequest request, LoadView view) {
        int n = candidates.size();
        if (n == 1) {
            return new Choice(candidates.get(0), REASON);
        }
        RandomGenerator r = random.get();
        int a = r.nextInt(n);
        int b = r.nextInt(n - 1);
        if (b >= a) {
            b++; // distinct from a, uniform over the others
        }
        double[] scores = load.scores(List.of(candidates.get(a), candidates.get(b)), request, view);
        return new Choice(candidates.get(scores[1] < scores[0] ? b : a), REASON);
    }
}
