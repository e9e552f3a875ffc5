package dev.sluice.gateway.coordination;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.coordination.CoordinationStatus.Mode;
import dev.sluice.gateway.routing.FleetRoutedLoad;
import dev.sluice.gateway.routing.WorkerSet;
import io.netty.util.concurrent.EventExecutor;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This replica's leases on the fleet's budgets (docs/scale-out.md). Every {@code renew_interval}
 * it reports its demand and renews its leases in one round trip ({@link LeaseStore}), and puts the
 * grants in force through {@link AdmissionController#applyShares}. No request waits on it: a
 * request only ever sees the limits of the last renewal.
 *
 * <p>Redis unreachable: the leases held are kept until they would expire (counted from when the
 * last successful renewal was sent, so never after Redis itself frees them), then each budget is
 * split by the last known number of replicas; {@link CoordinationStatus} says so, a WARN line when
 * it happens, an INFO line when Redis is back.
 *
 * <p>Touched only on its loop ({@code loop}): the renewal, its reply (hopped back from the client's
 * thread) and every field but {@link #status}.
 */
public final class FleetLeases implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(FleetLeases.class);
    /**
     * The most tenants' token rates one replica leases (the busiest; every tenant is unbounded, a
     * member's entry in Redis is not): past it, a tenant runs on its rate / N here.
     */
    static final int MAX_LEASED_TENANTS = 64;

    private final CoordinationConfig config;
    private final String replicaId;
    private final Supplier<String> address;
    private final LeaseStore store;
    private final AdmissionController admission;
    private final WorkerSet workers;
    private final DemandTally tally;
    private final FleetRoutedLoad routed;
    private final EventExecutor loop;
    private final LongSupplier clock;
    private final CountDownLatch firstLease = new CountDownLatch(1);
    private final LeaseTiming timing;
    private static final String NOT_RENEWED = "not yet renewed";
    private final java.util.concurrent.atomic.AtomicBoolean soon = new java.util.concurrent.atomic.AtomicBoolean();
    private final dev.sluice.gateway.logging.LogThrottle errorsSaid = new dev.sluice.gateway.logging.LogThrottle(1);

    private final long generation = ReplicaIdentity.incarnation();
    private boolean everLeased;
    private boolean settled; // serving on a correct budget: sticky once reached (readiness)
    private boolean draining;
    private volatile boolean left; // released by close(): no renewal after it
    private long firstLeaseNanos;
    private long lastLeaseNanos = -1; // when the last successful renewal was sent
    private long startedNanos;
    private long lastSentNanos;
    private boolean inFlight;
    private long inFlightSentNanos;
    private long seq; // the renewal whose answer is awaited: any other answer is late
    private long validUntilNanos; // the grants in force hold until then (this clock), counted from their renewal's send
    private long renewalErrors;
    private long lateReplies;
    private boolean failureSaid; // since the last successful renewal
    private int replicas = 1;
    private Mode mode = Mode.JOINING;
    private String reason = NOT_RENEWED; // never kept over a failure (FailureText.next)
    private Map<Resource, Long> grants = Map.of();
    private List<LeaseReply.Peer> peers = List.of();
    private volatile CoordinationStatus status;
    private ScheduledFuture<?> task;

    public FleetLeases(CoordinationConfig config, String replicaId, Supplier<String> address, LeaseStore store,
                       AdmissionController admission, WorkerSet workers, DemandTally tally, EventExecutor loop,
                       LongSupplier clock) {
        this(config, replicaId, address, store, admission, workers, tally,
                new FleetRoutedLoad(java.time.Duration.ofMinutes(1).toNanos(), clock), loop, clock);
    }

    /**
     * @param routed the share guard's figures: this replica's are reported with each renewal, the
     *               others' summed into it from each answer
     */
    public FleetLeases(CoordinationConfig config, String replicaId, Supplier<String> address, LeaseStore store,
                       AdmissionController admission, WorkerSet workers, DemandTally tally, FleetRoutedLoad routed,
                       EventExecutor loop, LongSupplier clock) {
        this.routed = Objects.requireNonNull(routed, "routed");
        this.config = Objects.requireNonNull(config, "config");
        this.replicaId = Objects.requireNonNull(replicaId, "replicaId");
        this.address = address;
        this.store = store;
        this.admission = admission;
        this.workers = workers;
        this.tally = tally;
        this.loop = loop;
        this.clock = clock;
        this.timing = new LeaseTiming(config.leaseTtl().toNanos(), config.renewInterval().toNanos());
        publish();
    }

    /** Holds nothing until the first grant (a joining replica takes no share it was not given), then renews. */
    public void start() {
        admission.applyShares(FleetDemand.shares(Map.of(), admission.config(), Integer.MAX_VALUE));
        startedNanos = clock.getAsLong();
        task = loop.scheduleWithFixedDelay(this::renew, 0, config.renewInterval().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Waits (not on an event loop: at start-up) up to {@code millis} for the first grant; false if none came. */
    public boolean awaitFirstLease(long millis) throws InterruptedException {
        return firstLease.await(millis, TimeUnit.MILLISECONDS);
    }

    public CoordinationStatus status() {
        return status;
    }

    /**
     * A request was refused, or waits, for want of this replica's share: renew now rather than at the
     * next tick (at most one early renewal per quarter of {@code renew_interval}), so a share follows
     * demand within a round trip where the fleet has room. Any thread, cheap.
     */
    public void renewSoon() {
        if (soon.compareAndSet(false, true)) {
            try {
                loop.execute(() -> {
                    soon.set(false);
                    if (!inFlight && clock.getAsLong() - lastSentNanos >= config.renewInterval().toNanos() / 4) {
                        renew();
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                soon.set(false); // shutting down
            }
        }
    }

    /**
     * The drain has started (SIGTERM, preStop): from now on this replica asks only for what it still
     * uses and takes no spare, and renews at once, so the others get the rest a round trip later
     * rather than after the drain. Readiness turns false.
     */
    public void draining() {
        loop.execute(() -> {
            if (!draining) {
                draining = true;
                publish();
                log.info("coordination draining replica_id={} giving_back=unused_shares", replicaId);
                if (!inFlight) {
                    renew();
                }
            }
        });
    }

    /** The periodic renewal: never lets an exception end the task (logged, counted, tried again next tick). */
    private void renew() {
        try {
            renewNow();
        } catch (Throwable e) { // an Error too: the task must survive it, Netty would cancel it silently
            renewalError(e);
        }
    }

    /**
     * An exception inside this replica (the store threw, an answer could not be applied; not Redis's answer):
     * counted, said (at most once a second), and taken as a renewal that failed: the lease is held until it
     * runs out, then budget / N, as with Redis down. Only counting it left a replica whose renewals kept
     * throwing fenced at nothing for good once its lease ran out. An answer still on its way is dropped.
     */
    private void renewalError(Throwable e) {
        inFlight = false;
        seq++;
        renewalErrors++;
        try {
            reason = FailureText.of(e);
            if (errorsSaid.tryAcquire(clock.getAsLong()) >= 0) {
                log.warn("coordination renewal error replica_id={} errors={} reason=\"{}\"", replicaId, renewalErrors,
                        reason, e);
            }
            failed(null, e, clock.getAsLong());
        } catch (Throwable again) { // the next tick tries again
            log.warn("coordination renewal error replica_id={} reason=\"{}\"", replicaId, again.toString());
        }
    }

    private void renewNow() {
        if (left) {
            return; // a renewal queued on the loop before close() would write the lease back after its release
        }
        long now = clock.getAsLong();
        if ((mode == Mode.LEASED || mode == Mode.HELD) && now - validUntilNanos >= 0) {
            // no answer came in time (a pause, a partition, a slow Redis): admission has fenced itself
            // (AdmissionController.applyShares' deadline); nothing is admitted until an answer or the fallback
            mode = Mode.LAPSED;
            log.warn("coordination lease lapsed replica_id={} admitting=nothing until=renewed_or_fallback", replicaId);
        }
        if (inFlight) {
            if (now - inFlightSentNanos < config.leaseTtl().toNanos() + config.renewInterval().toNanos()) {
                publish(); // the store's own timeout (at most the lease time) ends it
                return;
            }
            // overdue past any timeout: the process was paused, or the client lost it; its answer, if
            // one still comes, carries an old sequence number and is dropped
            inFlight = false;
            seq++;
        }
        AdmissionSnapshot s = admission.snapshot();
        Map<Resource, FleetDemand.Line> lines = FleetDemand.of(admission.config(), s, workers, tally.takeQueueFull(),
                tally.takeBudgetTokens(), admission.tenantDemand(MAX_LEASED_TENANTS));
        long sent = now;
        long mine = ++seq;
        inFlight = true;
        inFlightSentNanos = sent;
        lastSentNanos = sent;
        // what admission decides with until the answer is applied: the grants in force, none once they lapsed
        Map<Resource, Long> enforced = now - validUntilNanos < 0 || mode == Mode.FALLBACK ? grants : Map.of();
        // a store that throws rather than failing its answer: renew's catch (renewalError)
        store.renew(replicaId, address.get(), generation, config.leaseTtl().toMillis(),
                        FleetDemand.json(lines, enforced, draining), FleetDemand.routedJson(routed.ownNow()), draining)
                .whenComplete((json, e) -> hop(() -> renewed(mine, lines, sent, json, e)));
    }

    private void hop(Runnable r) {
        try {
            loop.execute(() -> {
                try {
                    r.run();
                } catch (Throwable e) {
                    renewalError(e);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing: the loop is gone, and so is the need for the answer
        }
    }

    private void renewed(long mine, Map<Resource, FleetDemand.Line> lines, long sent, String json, Throwable failure) {
        if (mine != seq) {
            lateReplies++; // an abandoned renewal (a pause outlived it): a newer one is on its way
            publish();
            return;
        }
        inFlight = false;
        long now = clock.getAsLong();
        LeaseReply reply = null;
        if (failure == null) {
            try {
                reply = LeaseReply.parse(json);
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        if (failure == null ? !timing.grantUsable(sent, now) : timing.failureStale(sent, now)) {
            // sent before a pause: what it says (grants, or that Redis did not answer) is about a lease
            // that has already run out; ask again now, on what is true now
            lateReplies++;
            log.warn("coordination late answer dropped replica_id={} age_ms={} failed={}", replicaId,
                    TimeUnit.NANOSECONDS.toMillis(now - sent), failure != null);
            publish();
            hop(this::renew);
            return;
        }
        if (failure != null) {
            failed(lines, failure, now);
            return;
        }
        leased(reply, sent, now);
    }

    private void leased(LeaseReply reply, long sent, long now) {
        if (reply.joined() && everLeased) {
            log.warn("coordination rejoined replica_id={} generation={} reason=lease_lapsed", replicaId, generation);
        }
        if (!everLeased) {
            firstLeaseNanos = now;
        }
        everLeased = true;
        failureSaid = false;
        lastLeaseNanos = sent;
        replicas = Math.max(1, reply.members().size());
        peers = reply.members();
        routed.peersReported(PeerLoad.summed(reply, replicaId, generation, routed));
        grants = Grants.byResource(reply.grants());
        validUntilNanos = timing.validUntil(sent);
        if (mode != Mode.LEASED) {
            log.info("coordination up replica_id={} fleet={} generation={} replicas={} was={}", replicaId,
                    fleetLabel(), generation, replicas, mode.label());
        }
        mode = Mode.LEASED;
        reason = "";
        if (!settled && (Grants.settled(grants, Grants.byResource(reply.targets()))
                || now - firstLeaseNanos >= config.leaseTtl().toNanos())) {
            settled = true;
            log.info("coordination serving replica_id={} fleet={} replicas={} queue_share={}", replicaId,
                    fleetLabel(), replicas, grants.getOrDefault(Resource.QUEUE, 0L));
        }
        admission.applyShares(FleetDemand.shares(grants, admission.config(), replicas), validUntilNanos);
        publish();
        firstLease.countDown();
    }

    /** @param lines what this renewal reported; null when it failed before (then a fallback is refreshed next time) */
    private void failed(Map<Resource, FleetDemand.Line> lines, Throwable failure, long now) {
        reason = FailureText.next(mode == Mode.LEASED || NOT_RENEWED.equals(reason) ? "" : reason, failure);
        if (mode != Mode.LEASED && !failureSaid) {
            // not leased (joining, or already on budget / N because the first attempt outlasted the lease time):
            // a wrong CA or password, Redis not there, said once with its cause, not left to a "not yet renewed"
            log.warn("coordination unreachable replica_id={} mode={} reason=\"{}\"", replicaId, mode.label(), reason);
        }
        failureSaid = true;
        if (mode == Mode.LEASED) {
            mode = Mode.HELD;
            log.warn("coordination down replica_id={} reason=\"{}\" holding_leases_ms={}", replicaId, reason,
                    Math.max(0, TimeUnit.NANOSECONDS.toMillis(validUntilNanos - now)));
        }
        if (!fallBackIfDue(now) && mode == Mode.FALLBACK && lines != null) {
            // still down: the fallback follows the capacities of the moment (a reload may change them)
            admission.applyShares(FleetDemand.shares(FleetDemand.fallback(lines, divisor()), admission.config(),
                    divisor()));
        }
        publish();
    }

    /** The N of budget / N: the fleet's last known membership, else {@code expected_replicas}, else 1. */
    private int divisor() {
        return everLeased ? replicas : Math.max(1, config.expectedReplicas());
    }

    private String fleetLabel() {
        return config.fleet().isEmpty() ? "\"\"" : config.fleet();
    }

    /**
     * Redis did not answer a renewal sent just now (not one from before a pause), and the lease has run
     * out (or, joining, a lease time passed without a first one): each budget / N. True when it switched now.
     */
    private boolean fallBackIfDue(long now) {
        boolean lapsed = switch (mode) {
            case HELD, LAPSED -> now - validUntilNanos >= 0;
            case JOINING -> now - startedNanos >= config.leaseTtl().toNanos();
            case LEASED, FALLBACK -> false;
        };
        if (!lapsed) {
            return false;
        }
        mode = Mode.FALLBACK;
        int n = divisor();
        // the tenants' rates need no line: a tenant without a grant runs on its rate / N
        grants = Map.copyOf(FleetDemand.fallback(FleetDemand.of(admission.config(), admission.snapshot(), workers, 0, 0,
                List.of()), n));
        log.warn("coordination lease expired replica_id={} running_on=budget/{} reason=\"{}\"", replicaId, n, reason);
        admission.applyShares(FleetDemand.shares(grants, admission.config(), n));
        publish();
        return true;
    }

    /** Ready for requests on a correct budget (docs/scale-out.md, "Readiness"). */
    private boolean serving() {
        return !draining && (settled || mode == Mode.FALLBACK);
    }

    private long ageMillis() {
        return lastLeaseNanos < 0 ? -1 : TimeUnit.NANOSECONDS.toMillis(clock.getAsLong() - lastLeaseNanos);
    }

    private void publish() {
        Map<String, Long> byName = new java.util.TreeMap<>();
        grants.forEach((r, g) -> byName.put(r.name(), g));
        status = new CoordinationStatus(mode == Mode.LEASED, mode, config.fleet(), serving(), replicaId, generation,
                replicas, byName, peers, ageMillis(), reason, renewalErrors, lateReplies);
    }

    /**
     * Stops renewing and gives the leases back (a graceful stop, after the drain: the others take
     * this replica's share at their next renewal, not a lease time later): {@link LeaseLeave}. Not on an event loop.
     */
    @Override
    public void close() {
        LeaseLeave.run(loop, this::leave, replicaId, generation, config.leaseTtl().toMillis());
        store.close();
    }

    private java.util.concurrent.CompletionStage<Void> leave() {
        left = true;
        if (task != null) {
            task.cancel(false);
        }
        return store.release(replicaId, generation);
    }
}
