package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The fields of a generation body that the simulator acts on, split into one {@link Item} per
 * batch entry (a /generate list, a completions prompt array, chat {@code n > 1}).
 *
 * @param kvTransferParams vLLM's {@code kv_transfer_params}, null when absent or JSON null
 * @param pdFields         the disaggregation fields present in the body ({@code bootstrap_host},
 *                         {@code bootstrap_port}, {@code bootstrap_room}, {@code kv_transfer_params}),
 *                         for the servers that must never see them
 */
record GenerationRequest(Route route, String rid, boolean batch, boolean stream, boolean includeUsage,
                         boolean logprobs, long clientGivesUpAtMs, List<Item> items, KvTransferParams kvTransferParams,
                         List<String> pdFields) {

    static final int DEFAULT_BOOTSTRAP_PORT = 8998;
    /**
     * Body field a load generator sets to the epoch millisecond at which its client stops waiting
     * (send time + client timeout). Not an SGLang field: only the simulator's accounting of work
     * done for departed clients reads it. Absent: 0, the client never gives up.
     */
    static final String GIVES_UP_AT_FIELD = "sim_client_gives_up_at_ms";
    private static final List<String> PD_FIELDS = List.of("bootstrap_host", "bootstrap_port", "bootstrap_room",
            "kv_transfer_params");

    /**
     * One independent request inside the body; {@code room} is null when the body carried none;
     * {@code prefix} holds the prompt's prefix-cache blocks ({@link PromptBlocks}).
     */
    record Item(int index, String rid, Long room, String bootstrapHost, int bootstrapPort, int promptTokens,
                int maxTokens, long[] prefix) {
    }

    /** A prompt's size in tokens and its prefix-cache blocks. */
    private record Prompt(int tokens, long[] prefix) {
    }

    /** A body the simulator refuses with 400. */
    static final class BadRequest extends Exception {
        BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    static GenerationRequest parse(Route route, JsonNode body, int defaultMaxTokens) throws BadRequest {
        return parse(route, body, defaultMaxTokens, null);
    }

    /**
     * @param requestId the request's id when the server names it itself (vLLM: from
     *                  {@code X-Request-Id}); null: the body's {@code rid}, else a random one (SGLang)
     */
    static GenerationRequest parse(Route route, JsonNode body, int defaultMaxTokens, String requestId)
            throws BadRequest {
        if (body == null || !body.isObject()) {
            throw new BadRequest("request body must be a JSON object");
        }
        List<Prompt> prompts = prompts(route, body);
        int n = prompts.size();
        boolean batch = route == Route.GENERATE ? isGenerateBatch(body)
                : route == Route.COMPLETIONS ? n > 1 || isPromptArray(body.path("prompt")) : n > 1;
        String exchangeRid = requestId != null ? requestId
                : body.path("rid").isTextual() ? body.get("rid").asText()
                : body.path("rid").isArray() && body.get("rid").size() > 0 ? body.get("rid").get(0).asText()
                : UUID.randomUUID().toString().replace("-", "");
        JsonNode rids = requestId != null ? null : body.get("rid");
        List<Item> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Prompt prompt = prompts.get(i);
            items.add(new Item(i, itemRid(rids, exchangeRid, i, n), room(body.get("bootstrap_room"), i, n),
                    text(perItem(body.get("bootstrap_host"), i)), port(perItem(body.get("bootstrap_port"), i)),
                    prompt.tokens(), maxTokens(route, body, i, defaultMaxTokens), prompt.prefix()));
        }
        boolean logprobs = route == Route.GENERATE ? truthy(perItem(body.get("return_logprob"), 0))
                : truthy(body.get("logprobs"));
        List<String> pd = PD_FIELDS.stream().filter(body::has).toList();
        return new GenerationRequest(route, exchangeRid, batch, body.path("stream").asBoolean(false),
                body.path("stream_options").path("include_usage").asBoolean(false), logprobs,
                Math.max(0, body.path(GIVES_UP_AT_FIELD).asLong(0)), List.copyOf(items), KvTransferParams.of(body), pd);
    }

    private static boolean truthy(JsonNode v) {
        return v != null && !v.isNull() && !(v.isBoolean() && !v.asBoolean()) && !(v.isNumber() && v.asInt() < 0);
    }

    private static JsonNode perItem(JsonNode v, int i) {
        return v != null && v.isArray() ? v.get(i) : v;
    }

    private static String text(JsonNode v) {
        return v == null || v.isNull() ? null : v.asText();
    }

    private static int port(JsonNode v) throws BadRequest {
        if (v == null || v.isNull()) {
            return DEFAULT_BOOTSTRAP_PORT;
        }
        if (!v.canConvertToInt() && !v.isTextual()) {
            throw new BadRequest("bootstrap_port: " + v + " (expected: an integer or null)");
        }
        return v.asInt();
    }

    private static Long room(JsonNode v, int i, int n) throws BadRequest {
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isArray()) {
            if (v.size() != n) {
                throw new BadRequest("bootstrap_room has " + v.size() + " entries for a batch of " + n);
            }
            JsonNode r = v.get(i);
            return r == null || r.isNull() ? null : r.asLong();
        }
        if (n > 1) {
            throw new BadRequest("bootstrap_room must be a list of " + n + " rooms for a batch of " + n);
        }
        if (!v.isIntegralNumber()) {
            throw new BadRequest("bootstrap_room: " + v + " (expected: an integer)");
        }
        return v.asLong();
    }

    private static String itemRid(JsonNode rid, String exchangeRid, int i, int n) throws BadRequest {
        if (rid != null && rid.isArray()) {
            if (rid.size() != n) {
                throw new BadRequest("rid has " + rid.size() + " entries for a batch of " + n);
            }
            return rid.get(i).asText();
        }
        return n == 1 ? exchangeRid : exchangeRid + "-" + i;
    }

    private static int maxTokens(Route route, JsonNode body, int i, int dflt) {
        JsonNode v;
        if (route == Route.GENERATE) {
            v = perItem(body.get("sampling_params"), i);
            v = v == null ? null : v.get("max_new_tokens");
        } else {
            v = body.hasNonNull("max_completion_tokens") ? body.get("max_completion_tokens") : body.get("max_tokens");
        }
        return v == null || v.isNull() ? dflt : Math.max(0, v.asInt());
    }

    private static boolean isGenerateBatch(JsonNode body) {
        JsonNode ids = body.get("input_ids");
        return body.path("text").isArray() || (ids != null && ids.isArray() && ids.size() > 0 && ids.get(0).isArray());
    }

    private static boolean isPromptArray(JsonNode prompt) {
        return prompt.isArray() && prompt.size() > 0 && (prompt.get(0).isTextual() || prompt.get(0).isArray());
    }

    private static List<Prompt> prompts(Route route, JsonNode body) throws BadRequest {
        List<Prompt> out = new ArrayList<>();
        switch (route) {
            case GENERATE -> {
                JsonNode ids = body.get("input_ids");
                JsonNode text = body.get("text");
                if (ids != null && ids.isArray()) {
                    if (ids.size() > 0 && ids.get(0).isArray()) {
                        ids.forEach(a -> out.add(ofIds(a)));
                    } else {
                        out.add(ofIds(ids));
                    }
                } else if (text != null && text.isArray()) {
                    text.forEach(t -> out.add(ofText(t.asText())));
                } else if (text != null && text.isTextual()) {
                    out.add(ofText(text.asText()));
                } else {
                    throw new BadRequest("/generate needs text or input_ids");
                }
            }
            case COMPLETIONS -> {
                JsonNode prompt = body.get("prompt");
                if (prompt == null || prompt.isNull()) {
                    throw new BadRequest("prompt is required");
                }
                if (isPromptArray(prompt)) {
                    prompt.forEach(p -> out.add(p.isArray() ? ofIds(p) : ofText(p.asText())));
                } else if (prompt.isArray()) {
                    out.add(ofIds(prompt)); // one prompt given as token ids
                } else {
                    out.add(ofText(prompt.asText()));
                }
            }
            case CHAT -> {
                JsonNode messages = body.get("messages");
                if (messages == null || !messages.isArray() || messages.isEmpty()) {
                    throw new BadRequest("messages must be a non-empty list");
                }
                long bytes = 0;
                int overhead = 0;
                for (JsonNode m : messages) {
                    bytes += contentBytes(m.get("content"));
                    overhead += 4;
                }
                int tokens = Math.max(1, (int) ((bytes + 3) / 4) + overhead);
                int n = body.path("n").asInt(1);
                if (n < 1) {
                    throw new BadRequest("n: " + n + " (expected: >= 1)");
                }
                Prompt shared = new Prompt(tokens, PromptBlocks.ofText(PromptBlocks.renderChat(messages)));
                for (int i = 0; i < n; i++) {
                    out.add(shared);
                }
            }
            default -> throw new IllegalStateException(route.toString());
        }
        return out;
    }

    private static Prompt ofIds(JsonNode ids) {
        return new Prompt(Math.max(1, ids.size()), PromptBlocks.ofIds(ids));
    }

    private static Prompt ofText(String text) {
        return new Prompt(tokensOf(text), PromptBlocks.ofText(text));
    }

    private static long contentBytes(JsonNode content) {
        if (content == null || content.isNull()) {
            return 0;
        }
        if (content.isArray()) {
            long sum = 0;
            for (JsonNode part : content) {
                sum += part.isTextual() ? utf8(part.asText()) : utf8(part.path("text").asText(""));
            }
            return sum;
        }
        return utf8(content.asText());
    }

    private static long utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }

    /** ceil(UTF-8 bytes / 4), at least 1: a rough tokenizer that every party can reproduce. */
    static int tokensOf(String text) {
        return (int) Math.max(1, (utf8(text) + 3) / 4);
    }
}
