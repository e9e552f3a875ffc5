package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;

/**
 * The body of {@code GET /readiness}: ready or not, usable workers per role (with pools: and each pool's
 * readiness and reason, {@link PoolReadiness}), and (with
 * {@code detail}: the admin side, or {@code listen.internal_endpoints}) each worker's address,
 * state and reason, which a public listener keeps to itself.
 */
final class ReadinessReport {
    /** The reason /readiness gives while it waits for the calibration of the prefill rates at start. */
    static final String CALIBRATING = "calibrating the prefill rates (admission.prefill_rate.calibration)";

    private ReadinessReport() {
    }

    /**
     * Waits (bounded, polling) until workers of every role are usable and the prefill rates' calibration at
     * start is settled; blocks the caller (start-up) thread.
     */
    static boolean await(ModelPool pool, long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (!pool.workers.ready() || !pool.calibrations.settled()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(10);
        }
        return true;
    }

    /** The verdict and the body, as {@code /readiness} answers them. */
    record Answer(boolean ready, String body) {
    }

    /**
     * {@code /readiness}. Without {@code pools:}: the one pool's workers (a usable worker of each role), not
     * draining, and the coordination serving. With them: the rule of {@link PoolReadiness}, and the body
     * lists each pool's readiness and reason.
     */
    static Answer answer(Pools pools, boolean draining,
                         java.util.Optional<dev.sluice.gateway.coordination.CoordinationStatus> coordination,
                         boolean detail) {
        if (!pools.explicit()) {
            WorkerSet workers = pools.defaultPool().workers;
            // not before the rates of the workers present at start are calibrated (bounded by its timeout)
            boolean calibrating = !pools.defaultPool().calibrations.settled();
            // with coordination, ready only on a correct budget: a lease that settled, or budget / N
            boolean ready = workers.ready() && !draining && !calibrating
                    && coordination.map(dev.sluice.gateway.coordination.CoordinationStatus::serving).orElse(true);
            ObjectNode root = root(workers, ready, detail, coordination);
            if (calibrating && workers.ready() && !draining) {
                root.put("reason", CALIBRATING);
            }
            return new Answer(ready, root.toString());
        }
        java.util.List<ModelPool> all = pools.all(); // one list: a reload may swap the pools meanwhile
        java.util.List<PoolReadiness> each = all.stream().map(PoolReadiness::of).toList();
        boolean ready = PoolReadiness.replicaReady(each, draining);
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("status", ready ? "ready" : "not_ready");
        if (draining) {
            root.put("reason", "draining");
        }
        usable(root.putObject("usable"), all.stream().flatMap(p -> p.workers.all().stream()).toList());
        coordination(root, coordination, detail);
        ArrayNode list = root.putArray("pools");
        for (int i = 0; i < each.size(); i++) {
            PoolReadiness r = each.get(i);
            ModelPool p = all.get(i);
            ObjectNode o = list.addObject().put("name", r.name()).put("ready", r.canServe())
                    .put("started", r.started()).put("reason", r.reason());
            usable(o.putObject("usable"), p.workers.all());
            if (detail) {
                workers(o.putArray("workers"), p.workers.all());
            }
        }
        return new Answer(ready, root.toString());
    }

    static String json(WorkerSet workers, boolean ready, boolean detail) {
        return json(workers, ready, detail, java.util.Optional.empty());
    }

    /**
     * With fleet coordination, also whether Redis is reached, where the limits come from and whether
     * this replica serves on a correct budget (not ready before: docs/scale-out.md, "Readiness"); a
     * replica on budget / N is still ready (it never stops serving), and says so here.
     */
    static String json(WorkerSet workers, boolean ready, boolean detail,
                       java.util.Optional<dev.sluice.gateway.coordination.CoordinationStatus> coordination) {
        return root(workers, ready, detail, coordination).toString();
    }

    private static ObjectNode root(WorkerSet workers, boolean ready, boolean detail,
                                   java.util.Optional<dev.sluice.gateway.coordination.CoordinationStatus> coordination) {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("status", ready ? "ready" : "not_ready");
        usable(root.putObject("usable"), workers.all());
        coordination(root, coordination, detail);
        if (detail) {
            workers(root.putArray("workers"), workers.all());
        }
        return root;
    }

    /** Usable and total workers per role. */
    private static void usable(ObjectNode usable, java.util.List<Worker> workers) {
        for (Worker w : workers) {
            ObjectNode role = usable.has(w.role().label()) ? (ObjectNode) usable.get(w.role().label())
                    : usable.putObject(w.role().label()).put("usable", 0).put("total", 0);
            role.put("total", role.get("total").asInt() + 1);
            if (w.isAvailable()) {
                role.put("usable", role.get("usable").asInt() + 1);
            }
        }
    }

    private static void coordination(ObjectNode root,
                                     java.util.Optional<dev.sluice.gateway.coordination.CoordinationStatus> coordination,
                                     boolean detail) {
        coordination.ifPresent(c -> {
            ObjectNode o = root.putObject("coordination").put("up", c.up()).put("mode", c.mode().label())
                    .put("serving", c.serving()).put("replicas", c.replicas());
            if (detail) {
                o.put("fleet", c.fleet()).put("replica_id", c.replicaId()).put("reason", c.reason());
            }
        });
    }

    /** The detail (addresses, states, reasons): only where {@code detail} allows. */
    private static void workers(ArrayNode list, java.util.List<Worker> workers) {
        for (Worker w : workers) {
            list.addObject().put("role", w.role().label()).put("url", w.url()).put("usable", w.isAvailable())
                    .put("state", w.state().label()).put("reason", w.status().reason())
                    .put("inflight", w.inflight());
        }
    }
}
