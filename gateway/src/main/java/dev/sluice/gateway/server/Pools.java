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

    private final List<ModelPool> all;
    private final ModelPool defaultPool;
    private final boolean explicit;
    private final Map<String, ModelPool> byModel = new HashMap<>();
    private final long created = System.currentTimeMillis() / 1000;

    Pools(List<ModelPool> all, ModelPool defaultPool, boolean explicit) {
        this.all = List.copyOf(all);
        this.defaultPool = defaultPool;
        this.explicit = explicit;
        for (ModelPool p : all) {
            p.models.forEach(m -> byModel.put(m, p));
        }
    }

    List<ModelPool> all() {
        return all;
    }

    ModelPool defaultPool() {
        return defaultPool;
    }

    /** Whether {@code pools:} was configured: then a model no pool names is refused. */
    boolean explicit() {
        return explicit;
    }

    Optional<ModelPool> named(String name) {
        return all.stream().filter(p -> p.name.equals(name)).findFirst();
    }

    /** The pool of {@code request}: by its model; the default pool when it names none; empty for an unknown model. */
    Optional<ModelPool> of(GenerationRequest request) {
        JsonNode m = request.body().get("model");
        if (!explicit || m == null || m.isNull() || (m.isTextual() && m.asText().isEmpty())) {
            return Optional.of(defaultPool);
        }
        return Optional.ofNullable(m.isTextual() ? byModel.get(m.asText()) : null);
    }

    /** Every model the names of every pool, aliases included, as a sentence for an error message. */
    String modelList() {
        return String.join(", ", byModel.keySet().stream().sorted().toList());
    }

    /**
     * {@code GET /v1/models} with pools: every pool's models, OpenAI's list object ({@code owned_by} is the
     * pool), answered by the gateway itself (each pool's workers know only their own model).
     */
    String models() {
        ObjectNode out = JSON.createObjectNode().put("object", "list");
        ArrayNode data = out.putArray("data");
        for (ModelPool p : all) {
            for (String m : p.models) {
                data.addObject().put("id", m).put("object", "model").put("created", created).put("owned_by", "sluice")
                        .put("pool", p.name).put("root", p.models.get(0));
            }
        }
        return out.toString();
    }
}
