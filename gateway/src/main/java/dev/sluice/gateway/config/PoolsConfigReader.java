package dev.sluice.gateway.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reads {@code pools:} and {@code default_pool:}. A pool's entry names the models it serves and
 * carries its own {@code disaggregation}, {@code workers}, {@code routing}, {@code health} and
 * {@code admission}; the last three are laid key by key over the top level's (which become every
 * pool's defaults). Admission keys that are the gateway's, not a pool's (API keys, the class list,
 * tenant limits, per-class settings, drain grace), are refused in a pool. Each pool becomes a whole
 * {@link GatewayConfig} as it sees it ({@link PoolsConfig.Pool#view}); the document's own is the
 * default pool's, with the list of pools.
 *
 * <pre>
 * pools:
 *   - name: large
 *     models: [deepseek-v3, ds]      # the first is the pool's model, the others aliases
 *     disaggregation: sglang
 *     workers: { prefill: [...], decode: [...] }
 *     admission: { max_queued_requests: 64 }
 *   - name: small
 *     models: [qwen3-8b]
 *     disaggregation: none
 *     workers: { unified: [...] }
 * default_pool: large                # requests without a model, /generate; default: the first
 * </pre>
 */
final class PoolsConfigReader {
    private static final List<String> MERGED = List.of("routing", "health", "admission");
    private static final List<String> OWN_ONLY = List.of("disaggregation", "vllm_kv_connector", "workers");
    /** Admission keys that stay the gateway's: who a client is and which class it gets do not depend on the model. */
    static final List<String> GATEWAY_WIDE_ADMISSION = List.of("api_keys", "require_api_key", "priorities",
            "default_priority", "tenant_limits", "per_class", "drain_grace");
    private static final String POOLS = "Model pools, each a set of workers serving the models it names with its own "
            + "disaggregation, workers (or discovery), routing, health and admission limits (docs/configuration.md, "
            + "\"Model pools\"). A request's model picks its pool; with pools, an unknown model gets 404 "
            + "model_not_found, and one pool's overload never refuses another's requests. routing, health and "
            + "admission at the top level are every pool's defaults, key by key; workers, disaggregation and "
            + "vllm_kv_connector are then each pool's alone. Absent: one pool, default, that takes any model.";

    private PoolsConfigReader() {
    }

    static boolean present(ConfigNode root) {
        return !root.child("pools").isMissing();
    }

    /** With {@code pools:}, the sections that are each pool's alone must not be written at the top level too. */
    static void refuseTopLevel(ConfigNode root) {
        for (String key : OWN_ONLY) {
            ConfigNode n = root.child(key);
            if (!n.isMissing()) {
                n.reject(ConfigNode.describe(n.raw()), "absent with pools: (each pool names its own " + key + ")");
            }
        }
    }

    /** Without {@code pools:}: records what the keys mean (the schema) and refuses a lone default_pool. */
    static void describeDefaultPool(ConfigNode root) {
        ConfigNode pools = root.child("pools", POOLS);
        if (root.reading().explore()) {
            for (ConfigNode item : pools.items(1, false)) { // one absent item: its keys go into the schema
                pool(root, item, new HashSet<>(), new HashMap<>(), () -> GatewayConfig.builder());
            }
        }
        ConfigNode def = defaultPoolNode(root);
        if (def.isMissing()) {
            def.optionalText(); // its type, for the schema
        } else {
            def.reject(ConfigNode.describe(def.raw()), "absent without pools:");
        }
    }

    private static ConfigNode defaultPoolNode(ConfigNode root) {
        return root.child("default_pool", "The pool that serves a request naming no model, and SGLang's native "
                + "endpoints (/generate, /get_model_info, /get_server_info). Only with pools:.")
                .defaultIs("the first pool");
    }

    /** The document with pools: the default pool's view, carrying every pool. */
    static GatewayConfig read(ConfigNode root, java.util.function.Supplier<GatewayConfig.Builder> shared) {
        ConfigNode poolsNode = root.child("pools", POOLS);
        // the top level's routing, health and admission are the pools' defaults: check-config shows them as written
        MERGED.forEach(section -> root.child(section).effectiveAsWritten());
        Set<String> names = new HashSet<>();
        Map<String, String> modelOwner = new HashMap<>();
        List<PoolsConfig.Pool> pools = new ArrayList<>();
        for (ConfigNode item : poolsNode.items(1, false)) {
            pool(root, item, names, modelOwner, shared).ifPresent(pools::add);
        }
        ConfigNode defNode = defaultPoolNode(root);
        String first = pools.isEmpty() ? PoolsConfig.IMPLICIT_NAME : pools.get(0).name();
        String def = defNode.text(first);
        if (!pools.isEmpty() && pools.stream().noneMatch(p -> p.name().equals(def))) {
            defNode.reject(def, "the name of a pool (" + String.join(", ", names.stream().sorted().toList()) + ")");
        }
        if (pools.isEmpty() && !root.reading().hasProblems()) {
            poolsNode.reject("[]", "at least one pool");
        }
        if (root.reading().hasProblems()) {
            return null; // every problem is reported (ConfigLoader throws them all); nothing is built from this
        }
        PoolsConfig config = new PoolsConfig(pools, def);
        return config.pool(def).orElseThrow().view().toBuilder().pools(config).build();
    }

    private static Optional<PoolsConfig.Pool> pool(ConfigNode root, ConfigNode item, Set<String> names,
                                                   Map<String, String> modelOwner,
                                                   java.util.function.Supplier<GatewayConfig.Builder> shared) {
        item.describe("One model pool.");
        item.allowOnly("name", "models", "disaggregation", "vllm_kv_connector", "workers", "routing", "health",
                "admission");
        ConfigNode nameNode = item.child("name", "The pool's name: the pool label of its metrics, its part of the "
                + "fleet's keys in Redis, /admin/state. Letters, digits, '.', '_' or '-'.");
        String name = nameNode.requiredText();
        if (name != null && !name.matches(CoordinationConfig.FLEET_NAME)) {
            nameNode.reject(name, CoordinationConfig.FLEET_NAME_EXPECTED);
            name = null;
        } else if (name != null && !names.add(name)) {
            nameNode.reject(name, "a name no other pool has");
            name = null;
        }
        List<String> models = models(item, name, modelOwner);
        ConfigNode admission = item.child("admission");
        if (admission.raw().isObject()) {
            for (String key : GATEWAY_WIDE_ADMISSION) {
                ConfigNode k = admission.child(key);
                if (!k.isMissing()) {
                    k.reject(ConfigNode.describe(k.raw()), "absent in a pool: admission." + key + " is the gateway's, "
                            + "set it at the top level");
                }
            }
        }
        ObjectNode merged = item.raw().isObject() ? ((ObjectNode) item.raw()).deepCopy()
                : JsonNodeFactory.instance.objectNode();
        for (String section : MERGED) {
            JsonNode m = merge(root.child(section).raw(), item.child(section).raw());
            if (m != null) {
                merged.set(section, m);
            }
        }
        if (root.reading().explore() && !merged.has("disaggregation") && !root.child("disaggregation").isMissing()) {
            merged.set("disaggregation", root.child("disaggregation").raw()); // each mode's keys, in the schema
        }
        ConfigNode sections = item.over(merged);
        GatewayConfigReader.PoolParts parts = GatewayConfigReader.poolParts(sections);
        // the gateway's own admission keys were read (the pool's admission holds them) but are not the pool's to set
        GATEWAY_WIDE_ADMISSION.forEach(k -> sections.child("admission").child(k).forgetEffective());
        if (name == null || models.isEmpty() || root.reading().explore()) {
            return Optional.empty();
        }
        try {
            GatewayConfig.Builder b = parts.applyTo(shared.get());
            GatewayConfig base = b.build();
            String poolName = name;
            return Optional.of(new PoolsConfig.Pool(name, models, base.toBuilder()
                    .coordination(base.coordination().map(c -> c.forPool(poolName))).build()));
        } catch (IllegalArgumentException e) {
            if (!item.reading().hasProblems()) {
                item.reading().problem(item.path(), item.path() + ": " + e.getMessage());
            }
            return Optional.empty();
        }
    }

    private static List<String> models(ConfigNode item, String pool, Map<String, String> owner) {
        ConfigNode n = item.child("models", "The model names this pool serves, as clients write them in a "
                + "request's model; the first is what /v1/models lists as the pool's, the others are aliases. Each "
                + "name in one pool only.");
        boolean present = n.require(item, "the models this pool serves");
        List<String> out = new ArrayList<>();
        for (ConfigNode entry : n.items(1, true)) {
            String m = entry.describe("A model name.").requiredText();
            if (m == null) {
                continue;
            }
            String before = owner.putIfAbsent(m, pool == null ? "?" : pool);
            if (before != null) {
                entry.reject(m, "a model no other pool serves (pool " + before + " does)");
                continue;
            }
            out.add(m);
        }
        if (present && out.isEmpty() && !n.reading().hasProblemAt(n.path())) {
            n.reject("[]", "at least one model name");
        }
        return out;
    }

    /** {@code over} laid key by key on {@code base} (mappings merge, anything else replaces); null when both absent. */
    static JsonNode merge(JsonNode base, JsonNode over) {
        boolean noBase = base == null || base.isMissingNode() || base.isNull();
        boolean noOver = over == null || over.isMissingNode() || over.isNull();
        if (noOver) {
            return noBase ? null : base.deepCopy();
        }
        if (noBase || !base.isObject() || !over.isObject()) {
            return over.deepCopy();
        }
        ObjectNode out = ((ObjectNode) base).deepCopy();
        over.fields().forEachRemaining(e -> {
            JsonNode m = merge(out.get(e.getKey()), e.getValue());
            out.set(e.getKey(), m);
        });
        return out;
    }
}
