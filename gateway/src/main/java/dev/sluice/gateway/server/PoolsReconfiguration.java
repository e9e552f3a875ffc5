package dev.sluice.gateway.server;

import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.PoolsConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.tracing.Tracing;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A reload across model pools. Each pool the new file keeps takes its own part of it ({@link
 * PoolsConfig.Pool#view}) through its {@link LiveReconfiguration}, so its admission limits, health settings
 * and workers change live as they do without pools. A pool the file adds is built and started (its workers,
 * health checks, identity probe, routing, admission, leases, KV events) before its models resolve to it; a
 * pool the file leaves out stops taking requests at once and is retired ({@link PoolRetirement}) once its
 * requests finished or the drain grace ran out. A new name is a removal and an addition. Refused whole,
 * nothing applied: removing the default pool (or changing {@code default_pool}), adding or removing
 * {@code pools:} itself, or changing a kept pool's models or protocol.
 */
final class PoolsReconfiguration implements Reconfigurable, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PoolsReconfiguration.class);

    private final Pools pools;
    private final Function<PoolsConfig.Pool, ModelPool> build; // the composition root's recipe for one pool
    private final PoolServices shared;
    private final List<PoolRetirement> retiring = new CopyOnWriteArrayList<>();
    private volatile GatewayConfig current;
    private boolean started; // under this; pools added before start are started with the others

    PoolsReconfiguration(Pools pools, GatewayConfig current, Function<PoolsConfig.Pool, ModelPool> build,
                         PoolServices shared) {
        this.pools = pools;
        this.current = current;
        this.build = build;
        this.shared = shared;
    }

    /** The configuration as written (with {@code pools:}, the default pool's view carrying every pool). */
    GatewayConfig config() {
        return current;
    }

    /** Starts every pool (the server's start); from then on a pool a reload adds starts as it is added. */
    synchronized void start() throws InterruptedException {
        for (ModelPool p : pools.all()) {
            p.start();
        }
        started = true;
    }

    /** Pools a reload removed that still drain (tests, state). */
    List<String> retiring() {
        return retiring.stream().map(PoolRetirement::pool).toList();
    }

    /**
     * Applies {@code next} whole or not at all: a changed {@code tracing:} (gateway-wide, not a pool's) is
     * made ready first and put in force only if the pools took their part.
     */
    @Override
    public synchronized AppliedChanges apply(GatewayConfig next) {
        Tracing.Change tracing = shared.tracing().prepare(next.tracing());
        AppliedChanges applied;
        try {
            applied = applyPools(next);
        } catch (RuntimeException e) {
            tracing.discard();
            throw e;
        }
        tracing.commit();
        return applied;
    }

    private AppliedChanges applyPools(GatewayConfig next) {
        if (!pools.explicit()) {
            if (next.pools().explicit()) {
                throw new IllegalArgumentException("pools: added; a gateway started without pools takes them only "
                        + "with a restart");
            }
            AppliedChanges a = pools.defaultPool().reconfiguration.apply(next);
            current = pools.defaultPool().config();
            return a;
        }
        PoolsConfig np = next.pools();
        String defaultName = pools.defaultPool().name;
        if (!np.explicit() || !np.defaultPool().equals(defaultName)) {
            throw new IllegalArgumentException("pools: the default pool " + defaultName + " cannot be removed or "
                    + "replaced by a reload (" + (np.explicit() ? "default_pool: " + np.defaultPool()
                    : "pools: removed") + "); restart for that");
        }
        List<ModelPool> running = pools.all();
        List<ModelPool> kept = new ArrayList<>();
        List<GatewayConfig> keptViews = new ArrayList<>();
        List<ModelPool> removed = new ArrayList<>();
        for (ModelPool p : running) {
            PoolsConfig.Pool n = np.pool(p.name).orElse(null);
            if (n == null) {
                removed.add(p);
            } else if (!n.models().equals(p.models) || n.view().disaggregation() != p.config().disaggregation()) {
                throw new IllegalArgumentException("pools: pool " + p.name + "'s models or disaggregation changed; "
                        + "they change with a restart, or under a new pool name (the old pool drains)");
            } else {
                kept.add(p);
                keptViews.add(n.view());
            }
        }
        List<ModelPool> added = buildAdded(np, running);
        Set<String> applied = new LinkedHashSet<>();
        Set<String> restart = new LinkedHashSet<>();
        try {
            // the added pools start first: one that cannot start refuses the reload before a kept pool changed
            if (started) {
                for (ModelPool p : added) {
                    p.addedLive();
                    p.start();
                }
                for (ModelPool p : added) {
                    awaitFirstVerdicts(p);
                }
            }
            for (int i = 0; i < kept.size(); i++) {
                AppliedChanges a = kept.get(i).reconfiguration.apply(keptViews.get(i));
                applied.addAll(a.applied());
                restart.addAll(a.restartRequired());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            discard(added);
            throw new IllegalArgumentException("pools: interrupted while starting the added pools");
        } catch (RuntimeException e) {
            discard(added);
            throw e;
        }
        List<ModelPool> serving = new ArrayList<>();
        for (PoolsConfig.Pool n : np.pools()) { // configuration order: /v1/models and the views follow it
            serving.add(running.stream().filter(p -> p.name.equals(n.name())).findFirst()
                    .orElseGet(() -> added.stream().filter(p -> p.name.equals(n.name())).findFirst().orElseThrow()));
        }
        pools.serve(serving);
        for (ModelPool p : added) {
            log.info("pool added by reload pool={} models={} mode={} prefill={} decode={}", p.name,
                    String.join(",", p.models), p.config().disaggregation().name().toLowerCase(),
                    p.workers.prefill().size(), p.workers.decode().size());
        }
        for (ModelPool p : removed) {
            PoolRetirement r = PoolRetirement.of(p, current.admission().drainGrace(), shared, this::releaseWorkers,
                    retiring::remove); // listed before it starts: a pool with nothing to drain is gone at once
            retiring.add(r);
            r.start();
        }
        if (!added.isEmpty() || !removed.isEmpty()) {
            applied.add("pools");
        }
        current = pools.defaultPool().config().toBuilder().pools(np).build();
        return new AppliedChanges(List.copyOf(applied), List.copyOf(restart));
    }

    /**
     * Waits (bounded) until every worker of a pool just started has had its first health verdict, so that its
     * models resolve to it only once it can tell a usable worker from a dead one: without the wait, its first
     * requests were refused {@code no_capacity} while the first checks ran. The bound is what the checks take to
     * eject a worker that never answers; past it the pool serves anyway (its requests get the usual 503 with a
     * reason until a worker is usable), and says so.
     */
    private static void awaitFirstVerdicts(ModelPool p) throws InterruptedException {
        var health = p.config().health();
        long bound = System.nanoTime() + health.interval().plus(health.timeout().multipliedBy(
                health.unhealthyThreshold())).toNanos();
        while (p.workers.all().stream().anyMatch(w -> w.status().awaitingFirstCheck() || w.identityPending())) {
            if (System.nanoTime() > bound) {
                log.warn("pool added by reload serves before every worker's first health verdict pool={} "
                        + "reason=\"{}\"", p.name, PoolReadiness.of(p).reason());
                return;
            }
            Thread.sleep(10); // the reload's own thread: no event loop waits here
        }
    }

    /** The pools {@code np} names that are not running, built (not started); none is visible yet. */
    private List<ModelPool> buildAdded(PoolsConfig np, List<ModelPool> running) {
        List<ModelPool> added = new ArrayList<>();
        try {
            for (PoolsConfig.Pool n : np.pools()) {
                if (running.stream().noneMatch(p -> p.name.equals(n.name()))) {
                    added.add(build.apply(n));
                }
            }
        } catch (RuntimeException e) {
            discard(added);
            throw new IllegalArgumentException("pools: a pool added by the reload could not be built: "
                    + e.getMessage(), e);
        }
        return added;
    }

    /** Pools built for a reload that is refused: closed before they served anything. */
    private void discard(List<ModelPool> built) {
        for (ModelPool p : built) {
            PoolRetirement.close(p, shared, this::releaseWorkers);
        }
    }

    /**
     * Closes the connections to {@code gone}'s workers that no pool serving now has. Under this object's lock, as
     * {@link #apply} is: a pool a concurrent reload adds on the same worker is either serving already (the
     * connections stay) or not yet built (it opens its own).
     */
    private synchronized void releaseWorkers(ModelPool gone) {
        for (Worker w : gone.workers.all()) {
            if (!served(w.name())) {
                shared.upstream().forget(w, shared.loops().upstreamLoops());
            }
        }
    }

    /** Whether a pool serving now has a worker named {@code worker} (its connections are then kept). */
    private boolean served(String worker) {
        return pools.all().stream().anyMatch(p -> p.workers.all().stream().anyMatch(w -> w.name().equals(worker)));
    }

    /** The gateway stops: pools still retiring stop what is left of their requests and close now. */
    @Override
    public void close() {
        List<PoolRetirement> now = List.copyOf(retiring);
        now.forEach(PoolRetirement::hurry); // all at once: N retiring pools take one wait, not N
        for (PoolRetirement r : now) {
            try {
                r.awaitClosed(HURRY_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static final long HURRY_MS = 15_000; // the aborts (3 s at most), the save (10 s at most), the leases
}
