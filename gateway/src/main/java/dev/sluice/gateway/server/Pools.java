package dev.sluice.gateway.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.GenerationRequest;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The running model pools and which one serves a request: the pool that names the request's
 * {@code model} (its own name or an alias); a request without one, and SGLang's native endpoints,
 * go to the default pool. Without {@code pools:} the one pool takes every model ({@link #explicit}
 * false); with them, a model no pool names has no pool (404 {@code model_not_found}).
 */
final class Pools {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ModelPool defaultPool; // never removed: a reload that would is refused whole
    private final boolean explicit;
    private final long created = System.currentTimeMillis() / 1000;
    /** The pools serving now and their models: swapped whole by a reload, read without a lock by every request. */
    private volatile Serving serving;

    private record Serving(List<ModelPool> all, Map<String, ModelPool> byModel) {
        static Serving of(List<ModelPool> all) {
            Map<String, ModelPool> byModel = new HashMap<>();
            for (ModelPool p : all) {
                p.models.forEach(m -> byModel.put(m, p));
            }
            return new Serving(List.copyOf(all), Map.copyOf(byModel));
        }
    }

    Pools(List<ModelPool> all, ModelPool defaultPool, boolean explicit) {
        this.defaultPool = defaultPool;
        this.explicit = explicit;
        this.serving = Serving.of(all);
    }

    /** The pools serving now, in configuration order (one read: callers that look twice keep the list). */
    List<ModelPool> all() {
        return serving.all();
    }

    /**
     * From now on {@code all} serve (a reload added or removed pools): a request resolves its model against
     * this list; a pool left out takes no new request, and its models are unknown unless another pool names
     * them. The default pool is always among them.
     */
    void serve(List<ModelPool> all) {
        if (!all.contains(defaultPool)) {
            throw new IllegalArgumentException("pools: the default pool " + defaultPool.name + " cannot be removed");
        }
        serving = Serving.of(all);
    }

    ModelPool defaultPool() {
        return defaultPool;
    }

    /** Whether {@code pools:} was configured: then a model no pool names is refused. */
    boolean explicit() {
        return explicit;
    }

    Optional<ModelPool> named(String name) {
        return all().stream().filter(p -> p.name.equals(name)).findFirst();
    }

    /** The pool of {@code request}: by its model; the default pool when it names none; empty for an unknown model. */
    Optional<ModelPool> of(GenerationRequest request) {
        JsonNode m = request.body().get("model");
        if (!explicit || m == null || m.isNull() || (m.isTextual() && m.asText().isEmpty())) {
            return Optional.of(defaultPool);
        }
        return Optional.ofNullable(m.isTextual() ? serving.byModel().get(m.asText()) : null);
    }

    /** Every model the names of every pool, aliases included, as a sentence for an error message. */
    String modelList() {
        return String.join(", ", serving.byModel().keySet().stream().sorted().toList());
    }

    /**
     * {@code GET /v1/models} with pools: every pool's models, OpenAI's list object ({@code owned_by} is the
     * pool), answered by the gateway itself (each pool's workers know only their own model).
     */
    String models() {
        ObjectNode out = JSON.createObjectNode().put("object", "list");
        ArrayNode data = out.putArray("data");
        for (ModelPool p : all()) {
            for (String m : p.models) {
                data.addObject().put("id", m).put("object", "model").put("created", created).put("owned_by", "sluice")
                        .put("pool", p.name).put("root", p.models.get(0));
            }
        }
        return out.toString();
    }
}
