package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;

/**
 * The body of {@code GET /readiness}: ready or not, usable workers per role, and (with
 * {@code detail}: the admin side, or {@code listen.internal_endpoints}) each worker's address,
 * state and reason, which a public listener keeps to itself.
 */
final class ReadinessReport {
    private ReadinessReport() {
    }

    /** Waits (bounded, polling) until workers of every role are usable; blocks the caller (start-up) thread. */
    static boolean await(WorkerSet workers, long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (!workers.ready()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(10);
        }
        return true;
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
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("status", ready ? "ready" : "not_ready");
        ObjectNode usable = root.putObject("usable");
        for (Worker w : workers.all()) {
            ObjectNode role = usable.has(w.role().label()) ? (ObjectNode) usable.get(w.role().label())
                    : usable.putObject(w.role().label()).put("usable", 0).put("total", 0);
            role.put("total", role.get("total").asInt() + 1);
            if (w.isAvailable()) {
                role.put("usable", role.get("usable").asInt() + 1);
            }
        }
        coordination.ifPresent(c -> {
            ObjectNode o = root.putObject("coordination").put("up", c.up()).put("mode", c.mode().label())
                    .put("serving", c.serving()).put("replicas", c.replicas());
            if (detail) {
                o.put("fleet", c.fleet()).put("replica_id", c.replicaId()).put("reason", c.reason());
            }
        });
        if (!detail) {
            return root.toString();
        }
        ArrayNode list = root.putArray("workers");
        for (Worker w : workers.all()) {
            list.addObject().put("role", w.role().label()).put("url", w.url()).put("usable", w.isAvailable())
                    .put("state", w.state().label()).put("reason", w.status().reason())
                    .put("inflight", w.inflight());
        }
        return root.toString();
    }
}
