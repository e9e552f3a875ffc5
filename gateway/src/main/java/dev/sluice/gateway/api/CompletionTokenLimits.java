package dev.sluice.gateway.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.config.ClassPolicy;
import java.util.ArrayList;
import java.util.List;

/**
 * A class's ceiling and default of the completion tokens one request may ask for
 * ({@code admission.per_class.<class>}), applied to the client's body before admission: a request
 * over the ceiling is refused (400 {@code max_tokens_too_large}) or has its limit lowered to it; a
 * request that names no limit is given the default. The body a worker receives carries the value
 * decided here, so what the gateway budgets for is what the worker generates at most.
 *
 * <p>The fields: {@code max_tokens} and {@code max_completion_tokens} on chat completions (SGLang
 * takes {@code max_completion_tokens or max_tokens}: sgl-project/sglang
 * {@code python/sglang/srt/entrypoints/openai/protocol.py} at 004c82e07d876f6e4a0ad6e15325706b0f478f1a,
 * {@code ChatCompletionRequest.to_sampling_params}; vLLM likewise), {@code max_tokens} alone on completions
 * (its {@code CompletionRequest} has no other), {@code sampling_params.max_new_tokens}
 * on {@code /generate}, in each item of a list of sampling params. Every one present is checked, so
 * which one a server prefers does not matter; a default is written as {@code max_tokens}, the field
 * both servers read on both OpenAI routes. Their types and signs were checked before
 * ({@link FieldTypes}: a non-negative 32-bit integer).
 */
public final class CompletionTokenLimits {
    private CompletionTokenLimits() {
    }

    /**
     * The request as class {@code className} allows it: itself when nothing applies, the same request
     * with its body rewritten when a limit was clamped or a default given.
     *
     * @throws ApiException 400 {@code max_tokens_too_large} naming the field and the ceiling, when the
     *                      class refuses requests over it
     */
    public static GenerationRequest apply(GenerationRequest request, ClassPolicy policy, String className)
            throws ApiException {
        if (!policy.limitsTokens()) {
            return request;
        }
        List<Slot> slots = slots(request);
        boolean changed = false;
        long ceiling = policy.maxTokensCeiling();
        for (Slot s : slots) {
            boolean named = false;
            for (String field : s.fields) {
                JsonNode v = s.owner.get(field);
                if (v == null || v.isNull() || !v.isIntegralNumber()) {
                    continue; // absent, or a field the route does not type (it is the worker's to refuse)
                }
                named = true;
                if (ceiling > 0 && (!v.canConvertToLong() || v.asLong() > ceiling)) {
                    if (policy.onExcess() == ClassPolicy.OnExcess.REFUSE) {
                        String param = s.prefix + field;
                        throw new ApiException(ApiError.invalidField("max_tokens_too_large", param, "Invalid value for '"
                                + param + "': " + v.asText() + " is more than the " + ceiling + " completion tokens a "
                                + "request of class '" + className + "' may ask for (expected: at most " + ceiling + ")."));
                    }
                    s.owner.put(field, ceiling);
                    changed = true;
                }
            }
            if (!named && policy.defaultMaxTokens() > 0) {
                s.owner.put(s.defaultField, policy.defaultMaxTokens());
                s.attach();
                changed = true;
            }
        }
        return changed ? request.rewritten() : request;
    }

    /** Where a limit may be named: the body on the OpenAI routes; each sampling_params object on /generate. */
    private static List<Slot> slots(GenerationRequest request) {
        ObjectNode body = request.body();
        List<Slot> out = new ArrayList<>(1);
        if (request.route() == GenerationRoute.CHAT_COMPLETIONS) {
            out.add(new Slot(body, "", new String[] {"max_tokens", "max_completion_tokens"}, "max_tokens"));
            return out;
        }
        if (request.route() == GenerationRoute.COMPLETIONS) {
            // max_tokens only: SGLang's CompletionRequest has no max_completion_tokens (sgl-project/sglang
            // python/sglang/srt/entrypoints/openai/protocol.py at 004c82e07d876f6e4a0ad6e15325706b0f478f1a,
            // class CompletionRequest), so one named there is not the limit the worker generates to
            out.add(new Slot(body, "", new String[] {"max_tokens"}, "max_tokens"));
            return out;
        }
        JsonNode sp = body.get("sampling_params");
        String[] fields = {"max_new_tokens"};
        if (sp == null || sp.isNull()) {
            ObjectNode created = JsonNodeFactory.instance.objectNode();
            out.add(new Slot(created, "sampling_params.", fields, "max_new_tokens") {
                @Override
                void attach() {
                    body.set("sampling_params", created);
                }
            });
        } else if (sp.isObject()) {
            out.add(new Slot((ObjectNode) sp, "sampling_params.", fields, "max_new_tokens"));
        } else if (sp.isArray()) {
            for (int i = 0; i < sp.size(); i++) {
                out.add(new Slot((ObjectNode) sp.get(i), "sampling_params[" + i + "].", fields, "max_new_tokens"));
            }
        }
        return out;
    }

    /** One object that may name a limit. */
    private static class Slot {
        final ObjectNode owner;
        final String prefix;
        final String[] fields;
        final String defaultField;

        Slot(ObjectNode owner, String prefix, String[] fields, String defaultField) {
            this.owner = owner;
            this.prefix = prefix;
            this.fields = fields;
            this.defaultField = defaultField;
        }

        /** Puts {@link #owner} into the body when it was made here (a /generate without sampling_params). */
        void attach() {
        }
    }
}
