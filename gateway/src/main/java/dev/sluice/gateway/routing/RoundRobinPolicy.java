package dev.sluice.gateway.routing;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/** Round robin over the usable workers, skipping unusable ones. */
public final class RoundRobinPolicy implements SelectionPolicy {
    private final AtomicLong next = new AtomicLong();

    @Override
    public Optional<Worker> select(List<Worker> candidates) {
        int n = candidates.size();
        if (n == 0) {
            return Optional.empty();
        }
        long start = next.getAndIncrement();
        for (int i = 0; i < n; i++) {
            Worker w = candidates.get((int) Math.floorMod(start + i, (long) n));
            if (w.isAvailable()) {
                return Optional.of(w);
            }
        }
        return Optional.empty();
    }
}
