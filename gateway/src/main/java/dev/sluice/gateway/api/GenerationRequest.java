package dev.sluice.gateway.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;

/**
 * A validated generation request: the client's JSON object plus what the gateway needs to know
 * about it (streamed? logprobs asked? how many items in a batch?). Validation happens before any
 * worker is chosen, so a bad body costs nothing but its parse.
 */
public final class GenerationRequest {
    /**
     * Top-level keys a worker request's body gets from the gateway only; a client's copy is dropped before
     * its body reaches a worker (pd.WorkerBodies says why for each). The one list: a body without any of
     * them is forwarded as it came.
     */
    public static final java.util.List<String> GATEWAY_OWNED = java.util.List.of("bootstrap_host", "bootstrap_port",
            "bootstrap_room", "rid", "kv_transfer_params", "routed_dp_rank", "data_parallel_rank",
            "disagg_prefill_dp_rank", "external_trace_header");

    private final GenerationRoute route;
    private final ObjectNode body;
    private final byte[] raw;
    private final boolean clean;
    private final boolean stream;
    private final boolean logprobs;
    private final int batchSize;
    private final int parallelSamples;

    private GenerationRequest(GenerationRoute route, ObjectNode body, byte[] raw, boolean stream, boolean logprobs,
                              int batchSize, int parallelSamples) {
        this.route = route;
        this.body = body;
        this.raw = raw;
        this.clean = !hasAny(body, GATEWAY_OWNED);
        this.stream = stream;
        this.logprobs = logprobs;
        this.batchSize = batchSize;
        this.parallelSamples = parallelSamples;
    }

    /** Parses with the default JSON limits ({@link RequestJson#DEFAULT}); the gateway uses its configured ones. */
    public static GenerationRequest parse(GenerationRoute route, ByteBuf content) throws ApiException {
        return RequestJson.DEFAULT.parse(route, content);
    }

    /** Validates a parsed body for its route: the prompt's shape, batch size, and every known field's type. */
    static GenerationRequest of(GenerationRoute route, ObjectNode body, byte[] raw) throws ApiException {
        int batch = switch (route) {
            case GENERATE -> generateBatch(body);
            case CHAT_COMPLETIONS -> chatBatch(body);
            case COMPLETIONS -> completionsBatch(body);
        };
        FieldTypes.check(route, body);
        int n = parallelSamples(route == GenerationRoute.GENERATE ? samplingN(body) : body.get("n"));
        boolean stream = body.path("stream").asBoolean(false);
        return new GenerationRequest(route, body, raw, stream, wantsLogprobs(route, body), batch, n);
    }

    private static int generateBatch(ObjectNode body) throws ApiException {
        JsonNode text = body.get("text");
        JsonNode ids = body.get("input_ids");
        JsonNode embeds = body.get("input_embeds");
        if (present(text)) {
            if (text.isTextual()) {
                return 0;
            }
            if (text.isArray() && !text.isEmpty() && allTextual(text)) {
                return text.size();
            }
            throw bad("text", "a string or a non-empty list of strings");
        }
        if (present(ids)) {
            if (ids.isArray() && !ids.isEmpty() && ids.get(0).isIntegralNumber()) {
                return 0;
            }
            if (ids.isArray() && !ids.isEmpty() && ids.get(0).isArray()) {
                return ids.size();
            }
            throw bad("input_ids", "a list of token ids or a non-empty list of such lists");
        }
        if (present(embeds)) {
            return 0;
        }
        throw new ApiException(ApiError.invalidRequest("missing_prompt",
                "one of text, input_ids or input_embeds is required"));
    }

    private static int chatBatch(ObjectNode body) throws ApiException {
        JsonNode messages = body.get("messages");
        if (!present(messages)) {
            throw new ApiException(ApiError.invalidRequest("missing_messages", "messages is required"));
        }
        if (!messages.isArray() || messages.isEmpty()) {
            throw bad("messages", "a non-empty list of message objects");
        }
        for (JsonNode m : messages) {
            if (!m.isObject() || !m.path("role").isTextual()) {
                throw bad("messages", "message objects with a string role");
            }
        }
        return 0;
    }

    private static int completionsBatch(ObjectNode body) throws ApiException {
        JsonNode prompt = body.get("prompt");
        if (!present(prompt)) {
            throw new ApiException(ApiError.invalidRequest("missing_prompt", "prompt is required"));
        }
        int items;
        if (prompt.isTextual()) {
            items = 0;
        } else if (prompt.isArray() && !prompt.isEmpty() && prompt.get(0).isIntegralNumber()) {
            items = 0;
        } else if (prompt.isArray() && !prompt.isEmpty() && (allTextual(prompt) || prompt.get(0).isArray())) {
            // a one-element list is still a batch to SGLang (serving_completions.py passes the list as text, and
            // GenerateReqInput renames a string rid to rid_0): it gets a per-item rid the gateway can abort exactly
            items = prompt.size();
        } else {
            throw bad("prompt", "a string, a list of strings, a list of token ids or a list of such lists");
        }
        return items;
    }

    /** {@code /generate} names n inside {@code sampling_params} (a list of them: SGLang wants the same n in each). */
    private static JsonNode samplingN(ObjectNode body) {
        JsonNode sp = body.get("sampling_params");
        if (sp != null && sp.isArray()) {
            sp = sp.isEmpty() ? null : sp.get(0);
        }
        return sp == null ? null : sp.get("n");
    }

    /**
     * Parallel samples per prompt ({@code n}); neither SGLang nor vLLM caps it (only n >= 1), and neither
     * does the gateway: what a PD mode cannot pair is refused per mode ({@code pd.ModeLimits}).
     */
    private static int parallelSamples(JsonNode n) throws ApiException {
        if (!present(n)) {
            return 1;
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt() || n.asInt() < 1) {
            throw bad("n", "an integer >= 1");
        }
        return n.asInt();
    }

    private static boolean wantsLogprobs(GenerationRoute route, ObjectNode body) {
        JsonNode v = body.get(route == GenerationRoute.GENERATE ? "return_logprob" : "logprobs");
        if (v == null || v.isNull()) {
            return false;
        }
        if (v.isArray()) { // /generate: one flag per prompt
            for (JsonNode e : v) {
                if (e.asBoolean(false)) {
                    return true;
                }
            }
            return false;
        }
        return v.isBoolean() ? v.booleanValue() : v.isNumber() && v.asInt() >= 0;
    }

    private static boolean present(JsonNode n) {
        return n != null && !n.isNull();
    }

    private static boolean allTextual(JsonNode array) {
        for (JsonNode e : array) {
            if (!e.isTextual()) {
                return false;
            }
        }
        return true;
    }

    private static ApiException bad(String field, String expected) {
        return new ApiException(ApiError.invalidRequest("invalid_field", field + " is invalid (expected: " + expected + ")"));
    }

    public GenerationRoute route() {
        return route;
    }

    /** The client's body; the dispatcher rewrites the gateway-owned fields in it. */
    public ObjectNode body() {
        return body;
    }

    /**
     * The client's body bytes exactly as received (valid JSON, one object: {@link #parse} checked),
     * for the drivers' fast path: when the client sent none of the gateway-owned fields
     * ({@link #clean}), a worker's body is these bytes, with the gateway's fields spliced in before
     * the closing brace, instead of the tree serialized again. Not to be modified.
     */
    public byte[] raw() {
        return raw;
    }

    /** The client sent none of the fields that belong to the gateway (bootstrap_*, rid, kv_transfer_params). */
    public boolean clean() {
        return clean;
    }

    private static boolean hasAny(ObjectNode body, java.util.List<String> keys) {
        for (String k : keys) {
            if (body.has(k)) {
                return true;
            }
        }
        return false;
    }

    /**
     * This request after the gateway changed its body in place (a class's completion-token limit):
     * the bytes of the fast path serialized again from the tree, so that a worker receives the change.
     */
    GenerationRequest rewritten() {
        try {
            return new GenerationRequest(route, body, SERIALIZER.writeValueAsBytes(body), stream, logprobs, batchSize,
                    parallelSamples);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("a parsed body cannot be serialized again", e);
        }
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper SERIALIZER =
            new com.fasterxml.jackson.databind.ObjectMapper();

    public boolean stream() {
        return stream;
    }

    /**
     * The most tokens the client asked for ({@code max_completion_tokens}, {@code max_tokens}, or
     * SGLang's {@code sampling_params.max_new_tokens}); 0 when it names none.
     */
    public long maxTokens() {
        long most = 0;
        JsonNode sp = body.get("sampling_params");
        if (sp != null && sp.isArray()) { // one per prompt: the largest bounds the request
            for (JsonNode item : sp) {
                most = Math.max(most, positive(item.get("max_new_tokens")));
            }
            return most;
        }
        // /v1/completions has max_tokens only (CompletionTokenLimits): a max_completion_tokens there is not read
        for (JsonNode n : new JsonNode[] {route == GenerationRoute.COMPLETIONS ? null : body.get("max_completion_tokens"),
                body.get("max_tokens"),
                sp == null ? null : sp.get("max_new_tokens")}) {
            if (positive(n) > 0) {
                return positive(n);
            }
        }
        return 0;
    }

    private static long positive(JsonNode n) {
        return n != null && n.isIntegralNumber() && n.canConvertToLong() && n.asLong() > 0 ? n.asLong() : 0;
    }

    public boolean logprobs() {
        return logprobs;
    }

    /** Number of prompts of a batched request, or 0 for a single prompt (parallel samples do not count: {@link #parallelSamples()}). */
    public int batchSize() {
        return batchSize;
    }

    /** {@code n}: samples generated per prompt, 1 unless asked. */
    public int parallelSamples() {
        return parallelSamples;
    }
}
