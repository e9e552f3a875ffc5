package dev.sluice.gateway.health;

import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerStatus;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where workers' states are decided: active check results, passive outcomes of
 * live traffic, telemetry and time all come in here, and each worker's state (healthy, degraded,
 * ejected, half-open, draining) goes out to the {@link Worker} it belongs to, where routing,
 * admission, readiness, metrics and {@code /admin/state} read it. One lock for all workers, held
 * for microseconds: a passive ejection must see the whole role (never the last worker).
 * Listeners hear every change of state, outside the lock.
 */
public final class HealthTable {
    private static final Logger log = LoggerFactory.getLogger(HealthTable.class);
    /** Stalls in a row, with no progress between them, that confirm a stall on a role's last worker. */
    static final int STALLS_TO_CONFIRM = 2;

    /** Told of every change of a worker's state; {@code cause} is set when the new state is an ejection. */
    public interface Listener {
        void stateChanged(Worker worker, WorkerStatus from, WorkerStatus to, FailureKind cause);
    }

    private record Change(WorkerHealth health, WorkerStatus from, WorkerStatus to) {
    }

    /** A probe of a suspect pair: the gateway's own request through {@code prefill} and {@code decode} (the same worker when unified). */
    public record ProbePair(Worker prefill, Worker decode) {
    }

    private final WorkerSet workers;
    private volatile HealthConfig config;
    private final LongSupplier clock;
    /** Draws the stall probes' jitter. */
    private final DoubleSupplier random;
    private final Map<Worker, WorkerHealth> table = new HashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private volatile Consumer<Worker> suspicionHandler = w -> { };
    /** Workers with a stall counted or suspected: the only ones progress has anything to clear on. */
    private final Set<Worker> stallWatched = ConcurrentHashMap.newKeySet();

    public HealthTable(WorkerSet workers, HealthConfig config, LongSupplier clock) {
        this(workers, config, clock, () -> ThreadLocalRandom.current().nextDouble());
    }

    /** ... with the stall probes' jitter drawn from {@code random} (values in [0, 1)). */
    public HealthTable(WorkerSet workers, HealthConfig config, LongSupplier clock, DoubleSupplier random) {
        this.workers = workers;
        this.config = config;
        this.clock = clock;
        this.random = random;
        for (Worker w : workers.all()) {
            table.put(w, new WorkerHealth(w, config));
        }
    }

    public HealthConfig config() {
        return config;
    }

    /** A worker added by a reload: ejected ("starting") until its first active check passes. */
    public void add(Worker w) {
        List<Change> changes = new ArrayList<>(1);
        synchronized (this) {
            WorkerHealth h = new WorkerHealth(w, config);
            table.put(w, h);
            record(h, clock.getAsLong(), changes);
        }
        announce(changes);
    }

    /** Forgets a worker a reload removed (once it drained). */
    public synchronized void remove(Worker w) {
        table.remove(w);
    }

    /** Reloaded health settings: thresholds and ejection times hold from the next outcome on. */
    public void reconfigure(HealthConfig next) {
        List<Worker> known;
        synchronized (this) {
            config = next;
            known = new ArrayList<>(table.keySet());
        }
        for (Worker w : known) {
            update(w, h -> h.reconfigure(next));
        }
    }

    public void addListener(Listener l) {
        listeners.add(l);
    }

    /** Who checks a suspected worker at once (the active checker). */
    public void onSuspicion(Consumer<Worker> handler) {
        this.suspicionHandler = handler;
    }

    /**
     * A request saw this worker stall (or cannot tell which of its two workers did): check it now
     * with a real generation instead of waiting for the next round; if that fails too, it is out.
     */
    public void suspect(Worker w) {
        suspicionHandler.accept(w);
    }

    public void activeResult(Worker w, FailureKind kind, boolean ok, String detail) {
        activeResult(w, kind, ok, detail, false);
    }

    /** {@code confirming}: the check ran because a request suspected the worker; a failure ejects at once. */
    public void activeResult(Worker w, FailureKind kind, boolean ok, String detail, boolean confirming) {
        update(w, h -> h.activeResult(kind, ok, detail, confirming));
    }

    /** A request the worker held ended well, or with an answer that is not the worker's fault. */
    public void success(Worker w) {
        update(w, h -> h.success(clock.getAsLong()));
    }

    /** A request failed because of this worker ({@code kind} is never a client's fault). */
    public void failure(Worker w, FailureKind kind, String detail) {
        update(w, h -> {
            long now = clock.getAsLong();
            String reason = h.failure(now, kind, detail);
            if (reason == null) {
                return;
            }
            if (roleCanSpare(h.worker)) {
                h.ejectPassive(now, kind, reason);
            } else {
                if (h.status().state() == WorkerState.HALF_OPEN) {
                    h.restartTrial();
                }
                log.warn("worker not ejected role={} worker={} reason=\"{}\" why=\"the role cannot spare it "
                                + "(health.passive.max_ejected_percent={}, never the last available worker)\"",
                        h.worker.role().label(), h.worker.name(), reason, config.passive().maxEjectedPercent());
            }
        });
    }

    /**
     * The stall watchdog caught a request making no progress on {@code w} (alone, or with the other
     * half of its pair when nobody can tell whose stall it is). With {@code health.stall_panic} on,
     * a worker its role cannot do without (no other available) becomes suspect once the stall is
     * confirmed: a second stall with no progress on it in between (one stall alone can be a
     * prefill slower than the watchdog's estimate, before the prefill rate is measured). Suspect:
     * no client request goes to it; the gateway probes its pair with its own requests
     * ({@link #startDueProbes}) until one succeeds. A role with another worker routes around it instead.
     */
    public void stalled(Worker w, String detail) {
        if (!config.stallPanic().enabled()) {
            return;
        }
        update(w, h -> {
            if (h.stallSuspect() || hasAlternative(h.worker)) {
                return; // already suspect (its probes decide), or its role routes around it
            }
            int strikes = h.stallStrike();
            stallWatched.add(h.worker);
            if (strikes < STALLS_TO_CONFIRM) {
                log.info("stall on the last worker role={} worker={} stalls_in_a_row={} why=\"one more with no "
                                + "progress in between makes it suspect (health.stall_panic)\" detail=\"{}\"",
                        h.worker.role().label(), h.worker.name(), strikes, detail);
                return;
            }
            long now = clock.getAsLong();
            h.suspectStall("stalled " + strikes + " requests in a row while no other " + h.worker.role().label()
                    + " worker could take its traffic (last: " + detail + ")", now, random);
            log.warn("worker suspect role={} worker={} first_probe_in_ms={} why=\"requests stall on it and its role "
                            + "has no other worker; health.stall_panic: new requests get 503 at once while the gateway "
                            + "probes the pair with its own requests\" detail=\"{}\"", h.worker.role().label(),
                    h.worker.name(), (h.worker.suspectProbe().map(p -> p.nextNanos()).orElse(now) - now) / 1_000_000,
                    detail);
        });
    }

    /**
     * The probes whose time has come: each suspect worker (published suspect, no probe of it
     * running, its back-off over) with a partner of the other role, a suspect one first (one probe
     * tests both), else an available one. Marks them running; the caller sends each and reports
     * with {@link #probeEnded}. A suspect worker with no partner at all waits for the next round.
     */
    public List<ProbePair> startDueProbes() {
        List<ProbePair> out = new ArrayList<>(0);
        List<Change> changes = new ArrayList<>(0);
        synchronized (this) {
            long now = clock.getAsLong();
            for (WorkerHealth h : table.values()) {
                if (!h.probeDue(now) || h.status().state() != WorkerState.SUSPECT) {
                    continue;
                }
                WorkerHealth partner = partnerOf(h);
                if (partner == null) {
                    continue;
                }
                h.probeStarted(now);
                if (partner != h && partner.probeIdle() && partner.status().state() == WorkerState.SUSPECT) {
                    partner.probeStarted(now);
                }
                out.add(h.worker.role() == WorkerRole.DECODE ? new ProbePair(partner.worker, h.worker)
                        : new ProbePair(h.worker, partner.worker));
                record(h, now, changes);
            }
        }
        announce(changes);
        return out;
    }

    /**
     * A probe started by {@link #startDueProbes} ended. A success clears the suspicion of every
     * suspect worker it tested (service resumes at once); a failure puts off their next probe by
     * one back-off step. Returns the workers the verdict counted for.
     */
    public List<Worker> probeEnded(ProbePair pair, boolean ok, String detail) {
        List<Worker> counted = new ArrayList<>(2);
        List<Change> changes = new ArrayList<>(2);
        double jitter = random.getAsDouble(); // one draw per probe: the suspects it tested stay on one schedule
        synchronized (this) {
            long now = clock.getAsLong();
            for (Worker w : pair.prefill() == pair.decode() ? List.of(pair.prefill())
                    : List.of(pair.prefill(), pair.decode())) {
                WorkerHealth h = table.get(w);
                if (h == null || !h.probeRunning()) {
                    continue;
                }
                counted.add(w);
                if (ok) {
                    int failed = h.probesFailed();
                    h.progressed();
                    stallWatched.remove(w);
                    log.info("stall probe succeeded role={} worker={} failed_before={} why=\"the pair answered the "
                            + "gateway's own request: back in rotation\"", w.role().label(), w.name(), failed);
                } else {
                    long wait = h.probeFailed(now, () -> jitter);
                    log.warn("stall probe failed role={} worker={} failed_in_a_row={} next_probe_in_ms={} detail=\"{}\"",
                            w.role().label(), w.name(), h.probesFailed(), wait / 1_000_000, detail);
                }
                record(h, now, changes);
            }
        }
        announce(changes);
        return counted;
    }

    /** Who a probe of suspect {@code h} goes through: itself when unified, else a suspect or an available worker of the other role. */
    private WorkerHealth partnerOf(WorkerHealth h) {
        WorkerRole role = h.worker.role();
        if (role == WorkerRole.UNIFIED) {
            return h;
        }
        List<Worker> others = workers.role(role == WorkerRole.DECODE ? WorkerRole.PREFILL : WorkerRole.DECODE);
        WorkerHealth available = null;
        for (Worker o : others) {
            WorkerHealth oh = table.get(o);
            if (oh == null) {
                continue;
            }
            if (oh.status().state() == WorkerState.SUSPECT && oh.probeIdle()) {
                return oh;
            }
            if (available == null || (o.state() == WorkerState.HEALTHY && available.worker.state() != WorkerState.HEALTHY)) {
                available = o.isAvailable() ? oh : available;
            }
        }
        return available;
    }

    /**
     * A request made progress on {@code w} (its first token, a finished half): any stall on it is
     * over. Called at every first token, on the event loop: without a stall on record it takes no lock.
     */
    public void progressed(Worker w) {
        if (stallWatched.remove(w)) { // removed first: a stall counted meanwhile adds it back
            update(w, WorkerHealth::progressed);
        }
    }

    /** The worker's latest KV token usage (NaN when unknown or stale). */
    public void telemetry(Worker w, double kvUsage) {
        update(w, h -> h.telemetry(kvUsage));
    }

    public void draining(Worker w, boolean on) {
        update(w, h -> h.draining(on));
    }

    /** Time passes: ejections that ran their course become half-open trials. Call often (every ~100 ms). */
    public void tick() {
        List<Change> changes = new ArrayList<>();
        synchronized (this) {
            long now = clock.getAsLong();
            for (WorkerHealth h : table.values()) {
                h.tick(now);
                record(h, now, changes);
            }
        }
        announce(changes);
    }

    private void update(Worker w, Consumer<WorkerHealth> change) {
        List<Change> changes = new ArrayList<>(1);
        synchronized (this) {
            WorkerHealth h = table.get(w);
            if (h == null) {
                return; // a worker no longer configured
            }
            change.accept(h);
            record(h, clock.getAsLong(), changes);
        }
        announce(changes);
    }

    private void record(WorkerHealth h, long now, List<Change> changes) {
        WorkerStatus before = h.status();
        WorkerStatus after = h.publish(now);
        if (after != null) {
            changes.add(new Change(h, before, after));
        }
    }

    /** Another worker of {@code w}'s role can take traffic now. */
    private boolean hasAlternative(Worker w) {
        for (Worker o : workers.role(w.role())) {
            if (o != w && o.isAvailable()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether passive signals may take {@code w} out: another available worker of its role stays,
     * and the role's ejected share stays within {@code health.passive.max_ejected_percent}.
     */
    private boolean roleCanSpare(Worker w) {
        List<Worker> role = workers.role(w.role());
        int otherAvailable = 0;
        int ejected = 1;
        for (Worker o : role) {
            if (o == w) {
                continue;
            }
            if (o.isAvailable()) {
                otherAvailable++;
            } else if (o.state() == WorkerState.EJECTED) {
                ejected++;
            }
        }
        return otherAvailable > 0 && ejected * 100L <= (long) config.passive().maxEjectedPercent() * role.size();
    }

    private void announce(List<Change> changes) {
        for (Change c : changes) {
            Worker w = c.health().worker;
            WorkerState to = c.to().state();
            FailureKind cause = to == WorkerState.EJECTED && c.from() != WorkerStatus.STARTING
                    ? c.health().ejectionKind() : null;
            if (to == WorkerState.EJECTED) {
                log.warn("worker ejected role={} worker={} from={} reason=\"{}\"", w.role().label(), w.name(),
                        c.from().state().label(), c.to().reason());
            } else {
                log.info("worker state role={} worker={} from={} to={} reason=\"{}\"", w.role().label(), w.name(),
                        c.from().state().label(), to.label(), c.to().reason());
            }
            for (Listener l : listeners) {
                l.stateChanged(w, c.from(), c.to(), cause);
            }
        }
    }
}
