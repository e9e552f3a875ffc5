package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The configured prefill and decode workers. Prefill/decode pairs are picked by admission
 * ({@code WorkerWindows}, which knows each worker's window); this picks the source of info GETs.
 */
public final class WorkerSet {
    // immutable lists, replaced whole when a reload adds or removes a worker: readers never lock
    private volatile List<Worker> prefill;
    private volatile List<Worker> decode;
    private final java.util.concurrent.atomic.AtomicLong infoCursor = new java.util.concurrent.atomic.AtomicLong();

    private final boolean unified;

    public WorkerSet(WorkersConfig config) {
        this.unified = !config.unified().isEmpty();
        if (unified) {
            // a unified worker stands in both roles: the same objects in both lists, once in all()
            this.prefill = config.unified().stream().map(e -> new Worker(WorkerRole.UNIFIED, e)).toList();
            this.decode = prefill;
        } else {
            this.prefill = config.prefill().stream().map(e -> new Worker(WorkerRole.PREFILL, e)).toList();
            this.decode = config.decode().stream().map(e -> new Worker(WorkerRole.DECODE, e)).toList();
        }
    }

    /**
     * Publishes a worker added by a reload (its health and admission state must exist first:
     * from here on routing may see it, though only once it is routable).
     */
    public synchronized void add(Worker w) {
        if (unified) {
            prefill = append(prefill, w);
            decode = prefill;
        } else if (w.role() == WorkerRole.DECODE) {
            decode = append(decode, w);
        } else {
            prefill = append(prefill, w);
        }
    }

    /** Withdraws a worker a reload removed, once it drained. */
    public synchronized void remove(Worker w) {
        prefill = prefill.stream().filter(x -> x != w).toList();
        decode = unified ? prefill : decode.stream().filter(x -> x != w).toList();
    }

    private static List<Worker> append(List<Worker> list, Worker w) {
        List<Worker> out = new ArrayList<>(list);
        out.add(w);
        return List.copyOf(out);
    }

    /** True in {@code disaggregation: none}: every worker prefills and decodes itself. */
    public boolean unified() {
        return unified;
    }

    public List<Worker> prefill() {
        return prefill;
    }

    public List<Worker> decode() {
        return decode;
    }

    /** The workers of one role. */
    public List<Worker> role(WorkerRole role) {
        return role == WorkerRole.DECODE ? decode : prefill;
    }

    public List<Worker> all() {
        List<Worker> p = prefill;
        if (unified) {
            return p;
        }
        List<Worker> all = new ArrayList<>(p);
        all.addAll(decode);
        return all;
    }

    /** A usable prefill worker for informational GETs ({@code /v1/models}, {@code /get_server_info}). */
    public Optional<Worker> selectInfoSource() {
        List<Worker> prefill = this.prefill;
        int n = prefill.size();
        long start = infoCursor.getAndIncrement();
        for (int i = 0; i < n; i++) {
            Worker w = prefill.get((int) Math.floorMod(start + i, (long) n));
            if (w.isAvailable()) {
                return Optional.of(w);
            }
        }
        return Optional.empty();
    }

    /** Ready means a request could be served: one available worker of each role (healthy, degraded or half-open). */
    public boolean ready() {
        return prefill.stream().anyMatch(Worker::isAvailable) && decode.stream().anyMatch(Worker::isAvailable);
    }
}
