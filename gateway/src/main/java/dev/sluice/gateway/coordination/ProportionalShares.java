package dev.sluice.gateway.coordination;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The share computation of {@code lease.lua}, in Java: the reference its tests hold the script to,
 * and the fallback ({@link #fallback}) a replica runs on when Redis is gone.
 *
 * <p>Proportional to demand and work-conserving (Doorman's "proportional share"), with a replica's
 * demand in two parts: its work (usage and what waits) and a headroom (what an idle replica asks for,
 * so that a burst landing on it starts on a share it holds). When the fleet's demand D fits in the
 * capacity C, each replica gets its demand plus an even part of the spare (none to a draining
 * replica); when only the work W fits, each gets its work and the rest in proportion to headroom;
 * else C x its work / W: a headroom never takes capacity that waiting work needs. Integer units: the floors, then the units left to the largest fractions (ties
 * by key), so every replica computes the same split. A replica is then granted at most C minus what
 * the others hold (the larger of their grant and their usage): grants never over-commit, and a
 * shrunk grant only takes effect as the others renew.
 */
public final class ProportionalShares {
    private ProportionalShares() {
    }

    /**
     * One replica's demand for a resource, by its member key: {@code headroom} of it is not work (at
     * most the demand); a {@code draining} replica takes no spare.
     */
    public record Demand(String key, long demand, long headroom, boolean draining) {
        public Demand {
            headroom = Math.min(headroom, demand);
        }

        /** All of it work, not draining. */
        public Demand(String key, long demand) {
            this(key, demand, 0, false);
        }

        long work() {
            return demand - headroom;
        }
    }

    /** Each member's target share of {@code capacity}, by key (before the safety cap). */
    public static Map<String, Long> targets(long capacity, List<Demand> demands) {
        long total = 0;
        long work = 0;
        long headroom = 0;
        int open = 0;
        for (Demand d : demands) {
            total += d.demand();
            work += d.work();
            headroom += d.headroom();
            open += d.draining() ? 0 : 1;
        }
        int n = demands.size();
        record Part(String key, long floor, double frac) {
        }
        List<Part> parts = new ArrayList<>();
        long given = 0;
        for (Demand d : demands) {
            double x;
            if (total <= capacity) {
                long spare = capacity - total;
                x = open == 0 ? d.demand() + (double) spare / n
                        : d.draining() ? d.demand() : d.demand() + (double) spare / open;
            } else if (work <= capacity) {
                x = d.work() + (double) (capacity - work) * d.headroom() / headroom;
            } else {
                x = (double) capacity * d.work() / work;
            }
            long floor = (long) Math.floor(x);
            parts.add(new Part(d.key(), floor, x - floor));
            given += floor;
        }
        parts.sort(Comparator.comparingDouble(Part::frac).reversed().thenComparing(Part::key));
        Map<String, Long> out = new java.util.HashMap<>();
        for (int i = 0; i < parts.size(); i++) {
            Part p = parts.get(i);
            out.put(p.key(), p.floor() + (i < capacity - given ? 1 : 0));
        }
        return out;
    }

    /** The grant: the target, capped by what the others hold ({@code heldByOthers}: their max(grant, usage)). */
    public static long grant(long target, long capacity, long heldByOthers) {
        return Math.max(0, Math.min(target, capacity - heldByOthers));
    }

    /** Redis gone and the lease lapsed: an even split over the last known number of live replicas (at least 1). */
    public static long fallback(long capacity, int lastKnownReplicas) {
        return capacity / Math.max(1, lastKnownReplicas);
    }
}
