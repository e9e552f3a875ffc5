package dev.sluice.gateway.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;

/**
 * The JSON type of every field the gateway or the workers act on, per route, checked before any
 * worker is chosen. Without it {@code "stream": "yes"} read as "not streamed" and {@code "max_tokens":
 * "ten"} reached a worker as its 422; now both are a 400 naming the field (OpenAI's
 * {@code invalid_type}, with {@code param}). {@code null} is accepted everywhere (clients send it for
 * "the default"). Unknown fields pass untouched: the workers own their extensions.
 */
final class FieldTypes {
    /** What a field may hold. */
    enum Kind {
        BOOLEAN("a boolean"),
        INTEGER("an integer"),
        NUMBER("a number"),
        STRING("a string"),
        OBJECT("an object"),
        ARRAY("an array"),
        STRING_OR_ARRAY("a string or an array of strings"),
        STRING_OR_OBJECT("a string or an object"),
        BOOLEAN_OR_INTEGER("a boolean or an integer"),
        /** A 64-bit signed integer: both servers take a {@code seed} of that range. */
        LONG("a 64-bit integer"),
        /** SGLang's {@code /generate} takes these per prompt as well: a value or a list of values. */
        BOOLEAN_OR_LIST("a boolean or a non-empty list of booleans"),
        INTEGER_OR_LIST("an integer or a non-empty list of integers"),
        OBJECT_OR_LIST("an object or a non-empty list of objects");

        final String expected;

        Kind(String expected) {
            this.expected = expected;
        }

        boolean accepts(JsonNode v) {
            return switch (this) {
                case BOOLEAN -> v.isBoolean();
                case INTEGER -> v.isIntegralNumber() && v.canConvertToInt();
                case NUMBER -> v.isNumber();
                case STRING -> v.isTextual();
                case OBJECT -> v.isObject();
                case ARRAY -> v.isArray();
                case STRING_OR_ARRAY -> v.isTextual() || v.isArray() && allText(v);
                case STRING_OR_OBJECT -> v.isTextual() || v.isObject();
                case BOOLEAN_OR_INTEGER -> v.isBoolean() || v.isIntegralNumber() && v.canConvertToInt();
                case LONG -> v.isIntegralNumber() && v.canConvertToLong();
                case BOOLEAN_OR_LIST -> v.isBoolean() || v.isArray() && !v.isEmpty() && all(v, JsonNode::isBoolean);
                case INTEGER_OR_LIST -> INTEGER.accepts(v) || v.isArray() && !v.isEmpty() && all(v, INTEGER::accepts);
                case OBJECT_OR_LIST -> v.isObject() || v.isArray() && !v.isEmpty() && all(v, JsonNode::isObject);
            };
        }
    }

    /** OpenAI's sampling fields shared by both OpenAI routes (vLLM's and SGLang's extensions included). */
    private static final Map<String, Kind> OPENAI_COMMON = Map.ofEntries(
            Map.entry("model", Kind.STRING),
            Map.entry("stream", Kind.BOOLEAN),
            Map.entry("stream_options", Kind.OBJECT),
            Map.entry("max_tokens", Kind.INTEGER),
            Map.entry("temperature", Kind.NUMBER),
            Map.entry("top_p", Kind.NUMBER),
            Map.entry("top_k", Kind.INTEGER),
            Map.entry("min_p", Kind.NUMBER),
            Map.entry("stop", Kind.STRING_OR_ARRAY),
            Map.entry("seed", Kind.LONG),
            Map.entry("presence_penalty", Kind.NUMBER),
            Map.entry("frequency_penalty", Kind.NUMBER),
            Map.entry("repetition_penalty", Kind.NUMBER),
            Map.entry("logit_bias", Kind.OBJECT),
            Map.entry("user", Kind.STRING),
            Map.entry("ignore_eos", Kind.BOOLEAN),
            Map.entry("min_tokens", Kind.INTEGER),
            Map.entry("skip_special_tokens", Kind.BOOLEAN));

    private static final Map<String, Kind> CHAT_ONLY = Map.of(
            "max_completion_tokens", Kind.INTEGER,
            "logprobs", Kind.BOOLEAN,
            "top_logprobs", Kind.INTEGER,
            "response_format", Kind.OBJECT,
            "tools", Kind.ARRAY,
            "tool_choice", Kind.STRING_OR_OBJECT,
            "parallel_tool_calls", Kind.BOOLEAN);

    private static final Map<String, Kind> COMPLETIONS_ONLY = Map.of(
            "logprobs", Kind.INTEGER,
            "echo", Kind.BOOLEAN,
            "suffix", Kind.STRING,
            "best_of", Kind.INTEGER);

    /**
     * SGLang's native {@code /generate}: {@code sampling_params}, {@code return_logprob},
     * {@code logprob_start_len} and {@code top_logprobs_num} may be lists, one per prompt
     * (sgl-project/sglang {@code python/sglang/srt/managers/io_struct.py}, {@code GenerateReqInput}).
     */
    private static final Map<String, Kind> GENERATE = Map.of(
            "sampling_params", Kind.OBJECT_OR_LIST,
            "stream", Kind.BOOLEAN,
            "return_logprob", Kind.BOOLEAN_OR_LIST,
            "logprob_start_len", Kind.INTEGER_OR_LIST,
            "top_logprobs_num", Kind.INTEGER_OR_LIST,
            "return_text_in_logprobs", Kind.BOOLEAN);

    private static final Map<String, Kind> SAMPLING_PARAMS = Map.ofEntries(
            Map.entry("max_new_tokens", Kind.INTEGER),
            Map.entry("min_new_tokens", Kind.INTEGER),
            Map.entry("temperature", Kind.NUMBER),
            Map.entry("top_p", Kind.NUMBER),
            Map.entry("top_k", Kind.INTEGER),
            Map.entry("min_p", Kind.NUMBER),
            Map.entry("stop", Kind.STRING_OR_ARRAY),
            Map.entry("n", Kind.INTEGER),
            Map.entry("sampling_seed", Kind.LONG),
            Map.entry("ignore_eos", Kind.BOOLEAN),
            Map.entry("skip_special_tokens", Kind.BOOLEAN),
            Map.entry("presence_penalty", Kind.NUMBER),
            Map.entry("frequency_penalty", Kind.NUMBER),
            Map.entry("repetition_penalty", Kind.NUMBER));

    /** Fields that count tokens: negative is never meaningful. */
    private static final java.util.Set<String> NON_NEGATIVE = java.util.Set.of("max_tokens", "max_completion_tokens",
            "min_tokens", "max_new_tokens", "min_new_tokens", "top_logprobs", "best_of", "top_logprobs_num");

    private FieldTypes() {
    }

    static void check(GenerationRoute route, ObjectNode body) throws ApiException {
        switch (route) {
            case CHAT_COMPLETIONS -> {
                check(body, OPENAI_COMMON, "");
                check(body, CHAT_ONLY, "");
            }
            case COMPLETIONS -> {
                check(body, OPENAI_COMMON, "");
                check(body, COMPLETIONS_ONLY, "");
            }
            case GENERATE -> {
                check(body, GENERATE, "");
                JsonNode sp = body.get("sampling_params");
                if (sp != null && sp.isObject()) {
                    check((ObjectNode) sp, SAMPLING_PARAMS, "sampling_params.");
                } else if (sp != null && sp.isArray()) {
                    for (int i = 0; i < sp.size(); i++) {
                        check((ObjectNode) sp.get(i), SAMPLING_PARAMS, "sampling_params[" + i + "].");
                    }
                }
            }
        }
    }

    private static void check(ObjectNode body, Map<String, Kind> fields, String prefix) throws ApiException {
        // walk the (usually short) body, not the table: a request names a handful of fields
        var it = body.fields();
        while (it.hasNext()) {
            var e = it.next();
            Kind kind = fields.get(e.getKey());
            JsonNode v = e.getValue();
            if (kind == null || v.isNull()) {
                continue;
            }
            String param = prefix + e.getKey();
            if (NON_NEGATIVE.contains(e.getKey()) && v.isIntegralNumber() && !v.canConvertToInt()) {
                // 9e18 or 2^63-1 tokens: no server generates them, and the gateway's budgets would not hold them
                throw new ApiException(ApiError.invalidField("invalid_value", param, "Invalid value for '" + param
                        + "': expected an integer from 0 to " + Integer.MAX_VALUE + ", but got " + v.asText() + "."));
            }
            if (!kind.accepts(v)) {
                throw new ApiException(ApiError.invalidField("invalid_type", param, "Invalid type for '" + param
                        + "': expected " + kind.expected + ", but got " + describe(v) + " instead."));
            }
            if (NON_NEGATIVE.contains(e.getKey()) && v.isIntegralNumber() && v.asLong() < 0) {
                throw new ApiException(ApiError.invalidField("invalid_value", param, "Invalid value for '" + param
                        + "': expected a non-negative integer, but got " + v.asInt() + "."));
            }
        }
    }

    private static String describe(JsonNode v) {
        if (v.isTextual()) {
            return "a string";
        }
        if (v.isBoolean()) {
            return "a boolean";
        }
        if (v.isIntegralNumber()) {
            return v.canConvertToInt() ? "an integer" : "an integer out of range";
        }
        if (v.isNumber()) {
            return "a decimal number";
        }
        if (v.isArray()) {
            return "an array";
        }
        return v.isObject() ? "an object" : v.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
    }

    private static boolean all(JsonNode array, java.util.function.Predicate<JsonNode> test) {
        for (JsonNode e : array) {
            if (!test.test(e)) {
                return false;
            }
        }
        return true;
    }

    private static boolean allText(JsonNode array) {
        for (JsonNode e : array) {
            if (!e.isTextual()) {
                return false;
            }
        }
        return true;
    }
}
