package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One prefill or decode server as the gateway sees it: its address, its state (published by the
 * health table: healthy, degraded, ejected, half-open, suspect, draining), and how many requests it
 * holds.
 */
public final class Worker {
    private final WorkerRole role;
    private volatile WorkerEndpoint endpoint; // replaced only by a reload that rotates its API key
    private final String name;
    private final AtomicInteger inflight = new AtomicInteger();
    private volatile WorkerStatus status = WorkerStatus.STARTING;
    /** Requests a half-open worker may still be given on trial (set by the health table). */
    private final AtomicInteger trialPermits = new AtomicInteger();
    private volatile WorkerTelemetry telemetry = WorkerTelemetry.NONE;
    private volatile WorkerIdentity identity = WorkerIdentity.UNKNOWN;
    /** How many of its data-parallel ranks requests are sent to (set by the identity probe). */
    private volatile RankPlan rankPlan = RankPlan.PER_WORKER;
    /**
     * A worker found at run time (discovery, the admin API, a reload) takes no request until its identity
     * check passed ({@code health.WorkerIdentityProbe}), besides its first health check.
     */
    private volatile boolean identityPending;
    /** Set by the health table while the worker is suspect of a silent stall, else null. */
    private volatile SuspectProbe suspectProbe;

    public Worker(WorkerRole role, WorkerEndpoint endpoint) {
        this.role = Objects.requireNonNull(role, "role");
        this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
        this.name = endpoint.host() + ":" + endpoint.port();
    }

    /**
     * A reload changed this worker's credentials (same URL and bootstrap port): requests from now
     * on carry the new key. Anything else about the address is a different worker.
     */
    public void rotateCredentials(WorkerEndpoint next) {
        WorkerEndpoint cur = endpoint;
        if (!cur.url().equals(next.url()) || !Objects.equals(cur.bootstrapPort(), next.bootstrapPort())) {
            throw new IllegalArgumentException("not the same worker: " + cur.url() + " vs " + next.url());
        }
        endpoint = next;
    }

    public WorkerRole role() {
        return role;
    }

    public String url() {
        return endpoint.url();
    }

    public String host() {
        return endpoint.host();
    }

    /** The host as OpenTelemetry's {@code server.address} names it: an IPv6 literal without its brackets. */
    public String address() {
        String h = endpoint.host();
        return h.length() > 1 && h.charAt(0) == '[' ? h.substring(1, h.length() - 1) : h;
    }

    /** An https:// worker: its connections speak TLS. */
    public boolean tls() {
        return endpoint.tls();
    }

    public int port() {
        return endpoint.port();
    }

    /** The prefill's KV bootstrap port, or null for "the server's default". */
    public Integer bootstrapPort() {
        return endpoint.bootstrapPort();
    }

    /** The {@code Authorization} header value this worker takes ({@code workers.api_key_env}), if it takes one. */
    public java.util.Optional<dev.sluice.gateway.config.Secret> authorization() {
        return endpoint.authorization();
    }

    /** host:port, the bounded {@code worker} label of metrics and logs. */
    public String name() {
        return name;
    }

    public WorkerStatus status() {
        return status;
    }

    public WorkerState state() {
        return status.state();
    }

    /** Published by the health table only. */
    public void status(WorkerStatus status) {
        this.status = Objects.requireNonNull(status, "status");
    }

    /** The number of trial requests a half-open worker may be given (set by the health table). */
    public void grantTrials(int n) {
        trialPermits.set(n);
    }

    /** Counts as capacity (healthy, degraded or half-open): see {@link WorkerState#available()}. */
    public boolean isAvailable() {
        return !identityPending && status.state().available();
    }

    /**
     * Admission may take a new request for it: it counts as capacity. A worker suspect of a stall
     * never takes a client's request: the gateway probes it with its own ({@code health.StallProbes}).
     */
    public boolean acceptsNewRequests() {
        return isAvailable();
    }

    /** May be given a new request now: healthy, or half-open with a trial permit left (not consumed). */
    public boolean routable() {
        if (identityPending) {
            return false;
        }
        WorkerState s = status.state();
        return s == WorkerState.HEALTHY || (onTrial(s) && trialPermits.get() > 0);
    }

    /** Half-open workers take requests only on trial, one permit each. */
    private static boolean onTrial(WorkerState s) {
        return s == WorkerState.HALF_OPEN;
    }

    /** Where the probing of this suspect worker's pair stands; empty unless it is suspect of a stall. */
    public java.util.Optional<SuspectProbe> suspectProbe() {
        return java.util.Optional.ofNullable(suspectProbe);
    }

    /** Published by the health table only (null: not suspect). */
    public void suspectProbe(SuspectProbe p) {
        this.suspectProbe = p;
    }

    /** Trial permits left (a half-open worker's). */
    public int trialPermits() {
        return trialPermits.get();
    }

    /**
     * Called when a new request is given to this worker: a half-open worker uses up one trial
     * permit. False when none was left (another request took the last one).
     */
    public boolean takeForNewRequest() {
        if (identityPending) {
            return false;
        }
        WorkerState s = status.state();
        if (s == WorkerState.HEALTHY) {
            return true;
        }
        if (!onTrial(s)) {
            return false;
        }
        int n;
        do {
            n = trialPermits.get();
            if (n <= 0) {
                return false;
            }
        } while (!trialPermits.compareAndSet(n, n - 1));
        return true;
    }

    /** What the worker last said it is ({@code health.WorkerIdentityProbe}). */
    public WorkerIdentity identity() {
        return identity;
    }

    public void identity(WorkerIdentity id) {
        this.identity = id;
    }

    /** How requests are routed to the worker's data-parallel ranks ({@link RankPlanner}). */
    public RankPlan rankPlan() {
        return rankPlan;
    }

    public void rankPlan(RankPlan plan) {
        this.rankPlan = Objects.requireNonNull(plan, "plan");
    }

    /** From now on the worker waits for a passing identity check before it takes requests. */
    public void awaitIdentity() {
        identityPending = true;
    }

    /** Its identity check passed (or it never needed one): it takes requests once health says so. */
    public void identityConfirmed() {
        identityPending = false;
    }

    public boolean identityPending() {
        return identityPending;
    }

    public WorkerTelemetry telemetry() {
        return telemetry;
    }

    public void telemetry(WorkerTelemetry t) {
        this.telemetry = t;
    }

    /** Gives back a trial permit taken by {@link #takeForNewRequest} for a request that was not sent after all. */
    public void returnTrial() {
        if (onTrial(status.state())) {
            trialPermits.incrementAndGet();
        }
    }

    public int inflight() {
        return inflight.get();
    }

    public void acquired() {
        inflight.incrementAndGet();
    }

    public void released() {
        inflight.decrementAndGet();
    }

    @Override
    public String toString() {
        return role.label() + "(" + name + ")";
    }
}
