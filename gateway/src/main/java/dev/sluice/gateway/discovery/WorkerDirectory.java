package dev.sluice.gateway.discovery;

import dev.sluice.gateway.config.DiscoveryConfig.RoleDiscovery;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.config.Secret;
import dev.sluice.gateway.routing.WorkerRole;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers each role list should have, merged from its sources: the file's list, the role's
 * discovery mechanism (DNS or Kubernetes) and the admin API; minus the workers the operator drained or
 * deleted, which stay out until they disappear from their source and come back. Every change hands the
 * merged list to {@link WorkerLists}, which adds (after the identity and health checks), drains and
 * retires. All under this object's lock; sources call in from their own threads.
 */
public final class WorkerDirectory implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WorkerDirectory.class);

    /** The live worker lists the directory drives. */
    public interface WorkerLists {
        /** The role's workers should now be {@code wanted}: add the new, drain the missing. */
        void reconcile(WorkerRole role, List<WorkerEndpoint> wanted);

        /** Stop the requests running on the draining worker named {@code name} now; false: no such worker. */
        boolean abortRequests(String name);
    }

    /** Builds a role's discovery mechanism. */
    public interface SourceFactory {
        EndpointSource create(WorkerRole role, RoleDiscovery discovery, Optional<Secret> authorization);
    }

    /** The outcome of an admin call: an HTTP status, and the worker's id or what was wrong. */
    public record AdminResult(int status, String id, String error) {
        static AdminResult ok(int status, String id) {
            return new AdminResult(status, id, null);
        }

        static AdminResult error(int status, String message) {
            return new AdminResult(status, null, message);
        }
    }

    private static final class RoleState {
        List<WorkerEndpoint> file = List.of();
        Optional<RoleDiscovery> discovery = Optional.empty();
        EndpointSource source;
        int generation;
        List<WorkerEndpoint> discovered = List.of();
        final Map<String, WorkerEndpoint> admin = new LinkedHashMap<>();
        /** Drained or deleted by the operator: kept out while their file or discovered entry stays. */
        final Set<String> held = new HashSet<>();
        Map<String, WorkerSource> wanted = Map.of();
    }

    private final WorkerLists lists;
    private final SourceFactory factory;
    private final Map<WorkerRole, RoleState> roles = new EnumMap<>(WorkerRole.class);
    /** Each worker's source, as last seen (also for a worker still draining after it left). */
    private final Map<String, WorkerSource> sources = new ConcurrentHashMap<>();
    private Optional<Secret> authorization = Optional.empty();
    private boolean closed;
    private boolean started;

    public WorkerDirectory(boolean unified, WorkerLists lists, SourceFactory factory) {
        this.lists = Objects.requireNonNull(lists, "lists");
        this.factory = Objects.requireNonNull(factory, "factory");
        for (WorkerRole r : unified ? List.of(WorkerRole.UNIFIED) : List.of(WorkerRole.PREFILL, WorkerRole.DECODE)) {
            roles.put(r, new RoleState());
        }
    }

    /** Starts the discovery mechanisms of {@code config} (before: the file's lists only). */
    public synchronized void start(WorkersConfig config) {
        started = true;
        configure(config);
    }

    /** The file's lists and mechanisms (at start, and at every reload): a changed mechanism starts anew. */
    public synchronized void configure(WorkersConfig config) {
        authorization = config.authorization();
        for (Map.Entry<WorkerRole, RoleState> e : roles.entrySet()) {
            WorkerRole role = e.getKey();
            RoleState st = e.getValue();
            st.file = switch (role) {
                case PREFILL -> config.prefill();
                case DECODE -> config.decode();
                default -> config.unified();
            };
            Optional<RoleDiscovery> next = config.discovery().forRole(role.label());
            if (!next.equals(st.discovery) || (next.isPresent() && st.source == null)) {
                restart(role, st, next);
            }
            recompute(role, st);
        }
    }

    private void restart(WorkerRole role, RoleState st, Optional<RoleDiscovery> next) {
        if (st.source != null) {
            st.source.close();
            st.source = null;
            log.info("worker discovery stopped role={} source={}", role.label(), st.discovery.get().source());
        }
        st.discovery = next;
        st.discovered = List.of();
        int generation = ++st.generation;
        if (next.isPresent() && started && !closed) {
            EndpointSource src = factory.create(role, next.get(), authorization);
            st.source = src;
            log.info("worker discovery started role={} source={} discovery={}", role.label(), src.kind().label(),
                    next.get());
            src.start(eps -> discovered(role, generation, src.kind(), eps));
        }
    }

    private synchronized void discovered(WorkerRole role, int generation, WorkerSource kind,
                                         List<WorkerEndpoint> endpoints) {
        RoleState st = roles.get(role);
        if (closed || st.generation != generation) {
            return; // a source stopped by a reload: its late answer is not in force
        }
        st.discovered = List.copyOf(endpoints);
        log.info("worker discovery answer role={} source={} workers={}", role.label(), kind.label(),
                endpoints.stream().map(WorkerDirectory::name).toList());
        recompute(role, st);
    }

    private void recompute(WorkerRole role, RoleState st) {
        WorkerSource discoveredKind = st.source == null ? WorkerSource.FILE : st.source.kind();
        Set<String> present = new HashSet<>();
        st.file.forEach(e -> present.add(name(e)));
        st.discovered.forEach(e -> present.add(name(e)));
        for (String gone : new ArrayList<>(st.held)) {
            if (!present.contains(gone)) {
                st.held.remove(gone);
                log.info("worker left its source, no longer held out role={} worker={}", role.label(), gone);
            }
        }
        Map<String, WorkerEndpoint> wanted = new LinkedHashMap<>();
        Map<String, WorkerSource> from = new LinkedHashMap<>();
        put(wanted, from, st.file, WorkerSource.FILE, st.held);
        put(wanted, from, st.discovered, discoveredKind, st.held);
        put(wanted, from, st.admin.values(), WorkerSource.ADMIN, st.held);
        for (Map.Entry<String, WorkerSource> e : from.entrySet()) {
            if (!st.wanted.containsKey(e.getKey())) {
                log.info("worker wanted role={} worker={} source={}", role.label(), e.getKey(), e.getValue().label());
            }
        }
        for (Map.Entry<String, WorkerSource> e : st.wanted.entrySet()) {
            if (!from.containsKey(e.getKey())) {
                log.info("worker no longer wanted, draining role={} worker={} source={}", role.label(), e.getKey(),
                        e.getValue().label());
            }
        }
        st.wanted = Map.copyOf(from);
        sources.putAll(from);
        lists.reconcile(role, List.copyOf(wanted.values()));
    }

    private static void put(Map<String, WorkerEndpoint> wanted, Map<String, WorkerSource> from,
                            Iterable<WorkerEndpoint> eps, WorkerSource kind, Set<String> held) {
        for (WorkerEndpoint e : eps) {
            String n = name(e);
            if (!held.contains(n) && !wanted.containsKey(n)) {
                wanted.put(n, e);
                from.put(n, kind);
            }
        }
    }

    /** The worker's id: its name, host:port (the {@code worker} label of its metrics). */
    public static String name(WorkerEndpoint e) {
        return e.host() + ":" + e.port();
    }

    /** {@code POST /admin/workers}: a worker added to a static role list. */
    public synchronized AdminResult add(String roleLabel, String url, Integer bootstrapPort) {
        WorkerRole role = roles.keySet().stream().filter(r -> r.label().equals(roleLabel)).findFirst().orElse(null);
        if (role == null) {
            return AdminResult.error(400, "role: " + roleLabel + " (expected: one of " + roles.keySet().stream()
                    .map(WorkerRole::label).toList() + ")");
        }
        if (bootstrapPort != null && role != WorkerRole.PREFILL) {
            return AdminResult.error(400, "bootstrap_port: only for a prefill worker");
        }
        RoleState st = roles.get(role);
        if (st.discovery.isPresent()) {
            return AdminResult.error(409, "the " + role.label() + " workers are found by " + st.discovery.get()
                    .source() + " discovery: workers are added only to static role lists");
        }
        WorkerEndpoint e;
        try {
            e = WorkerEndpoint.of(url, bootstrapPort, authorization);
        } catch (RuntimeException ex) {
            return AdminResult.error(400, ex.getMessage());
        }
        String id = name(e);
        for (RoleState any : roles.values()) {
            if (any.wanted.containsKey(id)) {
                return AdminResult.error(409, "worker " + id + " is already in rotation");
            }
        }
        st.held.remove(id);
        st.admin.put(id, e);
        log.info("worker added by admin api role={} worker={} url={}", role.label(), id, e.url());
        recompute(role, st);
        return AdminResult.ok(201, id);
    }

    /** {@code POST /admin/workers/{id}/drain}: no new requests, those in flight finish, then removed. */
    public synchronized AdminResult drain(String id) {
        return takeOut(id, "drained");
    }

    /** {@code DELETE /admin/workers/{id}}: removed now, its requests stopped (failed over where nothing was sent). */
    public synchronized AdminResult delete(String id) {
        AdminResult r = takeOut(id, "deleted");
        boolean stopped = lists.abortRequests(id); // also a worker already draining: its streams are cut now
        if (r.status() == 404 && stopped) {
            log.info("worker deleted by admin api while draining worker={}", id);
            return AdminResult.ok(200, id);
        }
        return r;
    }

    private AdminResult takeOut(String id, String verb) {
        for (Map.Entry<WorkerRole, RoleState> e : roles.entrySet()) {
            RoleState st = e.getValue();
            WorkerSource src = st.wanted.get(id);
            if (src == null) {
                continue;
            }
            if (src == WorkerSource.ADMIN) {
                st.admin.remove(id);
            } else {
                st.held.add(id);
            }
            log.info("worker {} by admin api role={} worker={} source={}", verb, e.getKey().label(), id, src.label());
            recompute(e.getKey(), st);
            return AdminResult.ok(200, id);
        }
        return AdminResult.error(404, "no worker " + id + " in rotation (ids are host:port, as in /admin/state)");
    }

    /** Where the worker named {@code name} came from (file when the directory never saw it). */
    public WorkerSource source(String name) {
        return sources.getOrDefault(name, WorkerSource.FILE);
    }

    @Override
    public synchronized void close() {
        closed = true;
        for (RoleState st : roles.values()) {
            if (st.source != null) {
                st.source.close();
                st.source = null;
            }
        }
    }
}
