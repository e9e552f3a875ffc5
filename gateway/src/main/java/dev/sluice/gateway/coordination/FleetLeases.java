package dev.sluice.gateway.coordination;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.coordination.CoordinationStatus.Mode;
import dev.sluice.gateway.routing.FleetRoutedLoad;
import dev.sluice.gateway.routing.WorkerSet;
import io.netty.util.concurrent.EventExecutor;
import java.util.HashMap;
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

    private final long generation = incarnation();
    private boolean everLeased;
    private long lastLeaseNanos = -1; // when the last successful renewal was sent
    private long startedNanos;
    private boolean inFlight;
    private boolean failureSaid; // since the last successful renewal
    private int replicas = 1;
    private Mode mode = Mode.JOINING;
    private String reason = "not yet renewed";
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
        publish();
    }

    /**
     * This process's incarnation: unique among the processes that ever use a replica id (the start
     * time in ms, and random bits against two starting in the same ms), so two processes given the
     * same id are two members, and a renewal sent again after a lost answer is still the same one.
     */
    private static long incarnation() {
        return System.currentTimeMillis() * 1000 + java.util.concurrent.ThreadLocalRandom.current().nextInt(1000);
    }

    /** This replica's id: the configured one, else host name + "-" + pid. */
    public static String replicaId(CoordinationConfig config) {
        if (!config.replicaId().isEmpty()) {
            return config.replicaId();
        }
        String host = System.getenv("HOSTNAME");
        if (host == null || host.isBlank()) {
            try {
                host = java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.net.UnknownHostException e) {
                host = "localhost";
            }
        }
        return host + "-" + ProcessHandle.current().pid();
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

    private void renew() {
        if (inFlight) {
            // the last renewal has not answered yet (its timeout will end it); the lease runs out meanwhile
            if (mode == Mode.LEASED && ageMillis() >= config.leaseTtl().toMillis() - config.renewInterval().toMillis()) {
                mode = Mode.HELD;
                reason = "no answer";
                log.warn("coordination down replica_id={} reason=\"no answer\" holding_leases_ms={}", replicaId,
                        Math.max(0, config.leaseTtl().toMillis() - ageMillis()));
            }
            expireIfDue();
            publish();
            return;
        }
        AdmissionSnapshot s = admission.snapshot();
        Map<Resource, FleetDemand.Line> lines = FleetDemand.of(admission.config(), s, workers, tally.takeQueueFull(),
                tally.takeBudgetTokens(), admission.tenantDemand(MAX_LEASED_TENANTS));
        long sent = clock.getAsLong();
        inFlight = true;
        try {
            store.renew(replicaId, address.get(), generation, config.leaseTtl().toMillis(), FleetDemand.json(lines),
                            FleetDemand.routedJson(routed.ownNow()))
                    .whenComplete((json, e) -> loop.execute(() -> renewed(lines, sent, json, e)));
        } catch (RuntimeException e) {
            renewed(lines, sent, null, e);
        }
    }

    private void renewed(Map<Resource, FleetDemand.Line> lines, long sent, String json, Throwable failure) {
        inFlight = false;
        LeaseReply reply = null;
        if (failure == null) {
            try {
                reply = LeaseReply.parse(json);
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        if (failure != null) {
            failed(lines, failure);
            return;
        }
        if (reply.joined() && everLeased) {
            log.warn("coordination rejoined replica_id={} generation={} reason=lease_lapsed", replicaId, generation);
        }
        everLeased = true;
        failureSaid = false;
        lastLeaseNanos = sent;
        replicas = Math.max(1, reply.members().size());
        peers = reply.members();
        routed.peersReported(peersRouted(reply, replicaId, generation, routed));
        Map<Resource, Long> next = new HashMap<>();
        reply.grants().forEach((name, g) -> {
            Resource r = Resource.parse(name);
            if (r != null) {
                next.put(r, g);
            }
        });
        grants = Map.copyOf(next);
        if (mode != Mode.LEASED) {
            log.info("coordination up replica_id={} generation={} replicas={} was={}", replicaId, generation, replicas,
                    mode.label());
        }
        mode = Mode.LEASED;
        reason = "";
        admission.applyShares(FleetDemand.shares(grants, admission.config(), replicas));
        publish();
        firstLease.countDown();
    }

    private void failed(Map<Resource, FleetDemand.Line> lines, Throwable failure) {
        reason = reason(failure);
        if (mode != Mode.LEASED && !failureSaid) {
            // not leased (joining, or already on budget / N because the first attempt outlasted the lease time):
            // a wrong CA or password, Redis not there, said once with its cause, not left to a "not yet renewed"
            log.warn("coordination unreachable replica_id={} mode={} reason=\"{}\"", replicaId, mode.label(), reason);
        }
        failureSaid = true;
        if (mode == Mode.LEASED) {
            mode = Mode.HELD;
            log.warn("coordination down replica_id={} reason=\"{}\" holding_leases_ms={}", replicaId, reason,
                    Math.max(0, config.leaseTtl().toMillis() - ageMillis()));
        }
        if (!expireIfDue() && mode == Mode.FALLBACK) {
            // still down: the fallback follows the capacities of the moment (a reload may change them)
            admission.applyShares(FleetDemand.shares(FleetDemand.fallback(lines, replicas), admission.config(), replicas));
        }
        publish();
    }

    /**
     * The other members' figures summed per worker, each aged by how long before this answer Redis
     * heard it (its {@code seen}, on Redis's clock like the answer's {@code now}).
     */
    static Map<String, Double> peersRouted(LeaseReply reply, String ownId, long ownGeneration, FleetRoutedLoad routed) {
        Map<String, Double> sum = new HashMap<>();
        for (LeaseReply.Peer p : reply.members()) {
            if (p.generation() == ownGeneration && p.replicaId().equals(ownId)) {
                continue;
            }
            long ageNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0, reply.serverMillis() - p.seenMillis()));
            p.routed().forEach((url, v) -> sum.merge(url, routed.aged(v, ageNanos), Double::sum));
        }
        return sum;
    }

    /**
     * What went wrong, for the log and {@code /readiness}: the failure and, when it wraps one, its root cause
     * (Lettuce's "Unable to connect" hides the TLS handshake or the WRONGPASS that made it fail).
     */
    static String reason(Throwable failure) {
        Throwable outer = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        Throwable root = outer;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = describe(outer);
        return root == outer ? text : text + "; cause: " + describe(root);
    }

    private static String describe(Throwable t) {
        String m = t.getMessage() == null ? "" : ": " + t.getMessage().replace('"', '\'').replace('\n', ' ');
        return t.getClass().getSimpleName() + m;
    }

    /** Past the lease with no renewal (or, joining, a lease time without a first one): each budget / N. True when it switched now. */
    private boolean expireIfDue() {
        boolean lapsed = switch (mode) {
            case HELD -> ageMillis() >= config.leaseTtl().toMillis();
            case JOINING -> clock.getAsLong() - startedNanos >= config.leaseTtl().toNanos();
            case LEASED, FALLBACK -> false;
        };
        if (!lapsed) {
            return false;
        }
        mode = Mode.FALLBACK;
        // the tenants' rates need no line: a tenant without a grant runs on its rate / N
        grants = Map.copyOf(FleetDemand.fallback(FleetDemand.of(admission.config(), admission.snapshot(), workers, 0, 0,
                List.of()), replicas));
        log.warn("coordination lease expired replica_id={} running_on=budget/{} reason=\"{}\"", replicaId, replicas,
                reason);
        admission.applyShares(FleetDemand.shares(grants, admission.config(), replicas));
        publish();
        return true;
    }

    private long ageMillis() {
        return lastLeaseNanos < 0 ? -1 : TimeUnit.NANOSECONDS.toMillis(clock.getAsLong() - lastLeaseNanos);
    }

    private void publish() {
        Map<String, Long> byName = new java.util.TreeMap<>();
        grants.forEach((r, g) -> byName.put(r.name(), g));
        status = new CoordinationStatus(mode == Mode.LEASED, mode, replicaId, generation, replicas, byName, peers,
                ageMillis(), reason);
    }

    @Override
    /**
     * Stops renewing and gives the leases back (a graceful stop, after the drain: the others take
     * this replica's share at their next renewal, not a lease time later). Waits up to a second for
     * Redis; a replica that cannot reach it lets the lease expire. Not on an event loop.
     */
    public void close() {
        if (task != null) {
            task.cancel(false);
        }
        try {
            store.release(replicaId, generation).toCompletableFuture().get(1, TimeUnit.SECONDS);
            log.info("coordination left replica_id={} generation={}", replicaId, generation);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            log.warn("coordination leave failed replica_id={} reason=\"{}\" lease_expires_in_ms={}", replicaId, e,
                    config.leaseTtl().toMillis());
        }
        store.close();
    }
}
