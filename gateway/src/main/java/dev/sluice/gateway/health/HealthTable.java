package dev.sluice.gateway.health;

import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.routing.Worker;
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
import java.util.function.Consumer;
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

    private final WorkerSet workers;
    private volatile HealthConfig config;
    private final LongSupplier clock;
    private final Map<Worker, WorkerHealth> table = new HashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private volatile Consumer<Worker> suspicionHandler = w -> { };
    /** Workers with a stall counted or suspected: the only ones progress has anything to clear on. */
    private final Set<Worker> stallWatched = ConcurrentHashMap.newKeySet();

    public HealthTable(WorkerSet workers, HealthConfig config, LongSupplier clock) {
        this.workers = workers;
        this.config = config;
        this.clock = clock;
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
     * one probe request at a time, the rest refused at once, until a request makes progress. A
     * role with another worker routes around it instead.
     */
    public void stalled(Worker w, String detail) {
        if (!config.stallPanic().enabled()) {
            return;
        }
        update(w, h -> {
            if (h.stallSuspect()) {
                h.probeAgain();
                return;
            }
            if (hasAlternative(h.worker)) {
                return;
            }
            int strikes = h.stallStrike();
            stallWatched.add(h.worker);
            if (strikes < STALLS_TO_CONFIRM) {
                log.info("stall on the last worker role={} worker={} stalls_in_a_row={} why=\"one more with no "
                                + "progress in between makes it suspect (health.stall_panic)\" detail=\"{}\"",
                        h.worker.role().label(), h.worker.name(), strikes, detail);
                return;
            }
            h.suspectStall("stalled " + strikes + " requests in a row while no other " + h.worker.role().label()
                    + " worker could take its traffic (last: " + detail + ")");
            log.warn("worker suspect role={} worker={} why=\"requests stall on it and its role has no other worker; "
                            + "health.stall_panic: one probe request at a time, new requests get 503 until one makes "
                            + "progress\" detail=\"{}\"", h.worker.role().label(), h.worker.name(), detail);
        });
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
