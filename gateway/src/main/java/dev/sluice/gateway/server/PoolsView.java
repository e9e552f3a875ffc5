package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admin.StateView;

/**
 * {@code /admin/state}'s {@code "pools"}: each model pool's name, models, protocol, whether it is the
 * default, and its own limits, queue, workers and KV events (as the top-level fields show them for the default
 * pool).
 */
final class PoolsView {
    private static final RecentErrors NONE = new RecentErrors(1);

    private PoolsView() {
    }

    static JsonNode json(Pools pools) {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        for (ModelPool p : pools.all()) {
            ObjectNode o = out.addObject();
            o.put("name", p.name).put("default", p == pools.defaultPool())
                    .put("disaggregation", p.config().disaggregation().name().toLowerCase());
            ArrayNode models = o.putArray("models");
            p.models.forEach(models::add);
            StateView view = new StateView(p.config(), p.workers, p.admission, NONE, () -> false, () -> 0);
            p.kvEvents.ifPresent(k -> view.kvView(k.view())); // the pool's own prefill workers' KV events
            ObjectNode state = view.render();
            PoolReadiness r = PoolReadiness.of(p);
            o.put("ready", r.canServe()).put("readiness", r.reason());
            o.set("limits", state.get("limits"));
            o.set("queue", state.get("queue"));
            o.set("workers", state.get("workers"));
            if (state.has("kv_events")) {
                o.set("kv_events", state.get("kv_events"));
            }
        }
        return out;
    }
}
