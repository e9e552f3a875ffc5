package dev.sluice.gateway.health;

import dev.sluice.gateway.config.HealthConfig;
import dev.sluice.gateway.routing.SuspectProbe;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerStatus;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.DoubleSupplier;

/**
 * One worker's health state machine, fed by active checks, passive outcomes of live traffic and
 * telemetry; it decides the worker's one {@link WorkerState}. Not thread-safe: the
 * {@link HealthTable} guards every instance with its lock (a passive ejection must look at the
 * whole role, so the decision is made under one lock for all workers).
 */
final class WorkerHealth {
    final Worker worker;
    private HealthConfig config; // under the table's lock
    private OutcomeWindow window;
    private final Map<FailureKind, Integer> activeFailures = new EnumMap<>(FailureKind.class);
    private final Map<FailureKind, Integer> activeSuccesses = new EnumMap<>(FailureKind.class);
    /** Active check kinds past their failure threshold, each cleared by its own passing streak. */
    private final Map<FailureKind, String> activeEjections = new EnumMap<>(FailureKind.class);
    private boolean everPassed;
    private int ejections;
    private long passiveEjectedUntil;
    private String passiveReason = "";
    private FailureKind passiveKind;
    private boolean halfOpen;
    private int trialSuccesses;
    private String degradedReason;
    private boolean draining;
    /** Why the worker is suspect of a silent stall (panic mode), or null. */
    private String stallSuspicion;
    /** Stalls caught on this worker since it last made progress (the panic mode wants two). */
    private int stallStrikes;
    /** While suspect: when the next probe of its pair starts, or the running one's deadline. */
    private long probeDue;
    private long probeStartedAt;
    private boolean probeRunning;
    /** Probes that failed since the verdict: the back-off's exponent. */
    private int probesFailed;
    private long healthySince;
    private WorkerStatus published = WorkerStatus.STARTING;

    WorkerHealth(Worker worker, HealthConfig config) {
        this.worker = worker;
        this.config = config;
        this.window = new OutcomeWindow(config.passive().window().toNanos());
    }

    WorkerStatus status() {
        return published;
    }

    OutcomeWindow window() {
        return window;
    }

    // ---- inputs ----

    /**
     * @param confirming the check was run because a request suspected this worker of stalling: a
     *                   failure confirms the stall and ejects at once, without waiting for a streak
     */
    void activeResult(FailureKind kind, boolean ok, String detail, boolean confirming) {
        if (ok) {
            activeFailures.put(kind, 0);
            int n = activeSuccesses.merge(kind, 1, Integer::sum);
            everPassed = true;
            if (activeEjections.containsKey(kind) && n >= config.healthyThreshold()) {
                activeEjections.remove(kind);
            }
            return;
        }
        activeSuccesses.put(kind, 0);
        int n = activeFailures.merge(kind, 1, Integer::sum);
        if (n >= config.unhealthyThreshold() || confirming) {
            String check = kind == FailureKind.ACTIVE_GENERATE ? "GET /health_generate" : "GET /health";
            activeEjections.put(kind, check + (confirming && n < config.unhealthyThreshold()
                    ? " failed while a request suspected it of stalling: " : " failed " + n + " times in a row: ")
                    + detail);
        }
    }

    /** A request the worker served ended well (or with an answer that is the client's fault). */
    void success(long now) {
        window.add(now, false);
        progressed();
        if (halfOpen) {
            trialSuccesses++;
            if (trialSuccesses >= config.passive().halfOpenRequests()) {
                halfOpen = false;
            }
        }
    }

    /**
     * A request failed because of this worker. Returns the reason when passive signals now call
     * for an ejection (the table decides whether the role can spare it), else null.
     */
    String failure(long now, FailureKind kind, String detail) {
        window.add(now, true);
        HealthConfig.Passive p = config.passive();
        if (halfOpen) {
            return "failed its half-open trial (" + kind.label() + ": " + detail + ")";
        }
        if (passiveEjectedUntil != 0) {
            return null; // already out
        }
        if (window.consecutiveFailures() >= p.consecutiveFailures()) {
            return window.consecutiveFailures() + " consecutive failures, last " + kind.label() + ": " + detail;
        }
        if (window.total(now) >= p.minRequests() && window.failureRatio(now) >= p.failureRatio()) {
            return String.format("failure ratio %.2f over the last %d outcomes, last %s: %s", window.failureRatio(now),
                    window.total(now), kind.label(), detail);
        }
        return null;
    }

    /** Ejects on passive signals for base x n (capped), n counting this worker's ejections. */
    void ejectPassive(long now, FailureKind kind, String reason) {
        ejections++;
        long base = config.passive().baseEjection().toNanos();
        long length = Math.min(config.passive().maxEjection().toNanos(), base * ejections);
        passiveEjectedUntil = now + length;
        passiveReason = reason + "; back on trial in " + length / 1_000_000 + " ms";
        passiveKind = kind;
        halfOpen = false;
        window.clear();
    }

    /** A failed half-open trial that the role cannot spare: start a new trial instead. */
    void restartTrial() {
        trialSuccesses = 0;
        worker.grantTrials(config.passive().halfOpenRequests());
    }

    /**
     * A confirmed stall on this worker, whose role has no other: suspect (panic mode) until a probe
     * of its pair succeeds. The first probe starts one back-off step from now.
     */
    void suspectStall(String reason, long now, DoubleSupplier random) {
        stallSuspicion = reason;
        probesFailed = 0;
        probeRunning = false;
        probeStartedAt = now;
        probeDue = now + ProbeBackoff.delayNanos(config.stallPanic(), 0, random);
        worker.suspectProbe(new SuspectProbe(probeDue, 0, 0));
    }

    /** Suspect, its next probe's time has come, and none runs (the table also checks the published state). */
    boolean probeDue(long now) {
        return stallSuspicion != null && !probeRunning && now - probeDue >= 0;
    }

    /** Whether a probe of its pair may start now (suspect and none running). */
    boolean probeIdle() {
        return stallSuspicion != null && !probeRunning;
    }

    boolean probeRunning() {
        return probeRunning;
    }

    /**
     * A probe of its pair starts now; its verdict is due by {@code now + probe_timeout}. Should it
     * fail, the next starts one un-jittered back-off step from now at the latest (or at its verdict):
     * what a client is told to wait for meanwhile.
     */
    void probeStarted(long now) {
        probeRunning = true;
        probeStartedAt = now;
        long verdict = now + config.stallPanic().probeTimeout().toNanos();
        long next = now + ProbeBackoff.delayNanos(config.stallPanic(), probesFailed + 1, () -> 0.0);
        probeDue = verdict;
        worker.suspectProbe(new SuspectProbe(next - verdict > 0 ? next : verdict, verdict, probesFailed));
    }

    /**
     * The probe failed: the next starts one (longer) back-off step after this one started, and
     * never before now. Returns the wait from now, in nanoseconds.
     */
    long probeFailed(long now, DoubleSupplier random) {
        probeRunning = false;
        probesFailed++;
        long next = probeStartedAt + ProbeBackoff.delayNanos(config.stallPanic(), probesFailed, random);
        probeDue = next - now > 0 ? next : now;
        worker.suspectProbe(new SuspectProbe(probeDue, 0, probesFailed));
        return probeDue - now;
    }

    int probesFailed() {
        return probesFailed;
    }

    boolean stallSuspect() {
        return stallSuspicion != null;
    }

    /** A request made progress on it (a first token, a finished half): whatever stalled before is over. */
    void progressed() {
        stallSuspicion = null;
        stallStrikes = 0;
        probeRunning = false;
        probesFailed = 0;
        worker.suspectProbe(null);
    }

    /** Whether a stall on it is counted or suspected (progress then has something to clear). */
    boolean stallWatched() {
        return stallStrikes > 0 || stallSuspicion != null;
    }

    /** One more stall caught with no progress since the last; returns how many in a row. */
    int stallStrike() {
        return ++stallStrikes;
    }

    void telemetry(double kvUsage) {
        if (worker.role() == WorkerRole.PREFILL || Double.isNaN(kvUsage)) {
            degradedReason = null; // unknown is not full: never keep a worker out on missing numbers
            return;
        }
        degradedReason = kvUsage > config.decodeMaxKvUsage()
                ? String.format("KV token usage %.3f above health.decode_max_kv_usage=%.3f", kvUsage,
                        config.decodeMaxKvUsage())
                : null;
    }

    /** New settings; a changed passive window length starts an empty window. */
    void reconfigure(HealthConfig next) {
        if (!next.passive().window().equals(config.passive().window())) {
            window = new OutcomeWindow(next.passive().window().toNanos());
        }
        config = next;
        if (!next.stallPanic().enabled()) {
            progressed(); // panic mode off: the last worker is back in rotation at once
        }
    }

    void draining(boolean on) {
        draining = on;
    }

    /** Time passes: an ejection that ran its course becomes a half-open trial. */
    void tick(long now) {
        if (passiveEjectedUntil != 0 && now - passiveEjectedUntil >= 0) {
            passiveEjectedUntil = 0;
            halfOpen = true;
            trialSuccesses = 0;
        }
        if (ejections > 0 && healthySince != 0 && now - healthySince > config.passive().maxEjection().toNanos()) {
            ejections = 0; // long healthy: the next ejection is short again
        }
    }

    // ---- the decision ----

    /** Recomputes the state; returns the new status if it changed (already published), else null. */
    WorkerStatus publish(long now) {
        WorkerState state;
        String reason;
        if (draining) {
            state = WorkerState.DRAINING;
            reason = "removed from the configuration; in-flight requests finish";
        } else if (!activeEjections.isEmpty()) {
            state = WorkerState.EJECTED;
            reason = "active check: " + String.join("; ", activeEjections.values());
        } else if (!everPassed) {
            state = WorkerState.EJECTED;
            reason = WorkerStatus.STARTING.reason();
        } else if (passiveEjectedUntil != 0) {
            state = WorkerState.EJECTED;
            reason = "passive: " + passiveReason;
        } else if (stallSuspicion != null) {
            state = WorkerState.SUSPECT;
            reason = stallSuspicion + "; no client request goes to it (each gets a 503 at once) while the gateway "
                    + "probes the pair with its own requests until one succeeds (health.stall_panic)";
        } else if (halfOpen) {
            state = WorkerState.HALF_OPEN;
            reason = "on trial after an ejection: " + trialSuccesses + " of " + config.passive().halfOpenRequests()
                    + " trial requests succeeded";
        } else if (degradedReason != null) {
            state = WorkerState.DEGRADED;
            reason = degradedReason;
        } else {
            state = WorkerState.HEALTHY;
            reason = "";
        }
        if (state == WorkerState.HEALTHY) {
            if (healthySince == 0) {
                healthySince = now;
            }
        } else {
            healthySince = 0;
        }
        if (state == published.state() && reason.equals(published.reason())) {
            return null;
        }
        boolean sameState = state == published.state();
        published = new WorkerStatus(state, reason, sameState ? published.since() : Instant.now());
        if (!sameState && state == WorkerState.HALF_OPEN) {
            worker.grantTrials(config.passive().halfOpenRequests()); // before the state: never half-open without permits
        }
        worker.status(published);
        return sameState ? null : published;
    }

    /** Which kind put the worker out last (for the ejection counter's reason). */
    FailureKind ejectionKind() {
        if (!activeEjections.isEmpty()) {
            return activeEjections.keySet().iterator().next();
        }
        return passiveKind;
    }
}
