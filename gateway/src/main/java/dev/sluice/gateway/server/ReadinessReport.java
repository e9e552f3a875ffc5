package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;

/** The body of {@code GET /readiness}: ready or not, and each worker's state. */
final class ReadinessReport {
    private ReadinessReport() {
    }

    static String json(WorkerSet workers) {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("status", workers.ready() ? "ready" : "not_ready");
        ArrayNode list = root.putArray("workers");
        for (Worker w : workers.all()) {
            list.addObject().put("role", w.role().label()).put("url", w.url()).put("usable", w.isAvailable())
                    .put("state", w.state().label()).put("reason", w.status().reason())
                    .put("inflight", w.inflight());
        }
        return root.toString();
    }
}
