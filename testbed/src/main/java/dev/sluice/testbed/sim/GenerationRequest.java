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
     * {@code prefix} holds the prompt's prefix-cache blocks ({@link PromptBlocks}); {@code prompt} is
     * the index of its prompt in the body and {@code sample} its index among the prompt's
     * {@code n} parallel samples (0 when n = 1).
     */
    record Item(int index, String rid, Long room, String bootstrapHost, int bootstrapPort, int promptTokens,
                int maxTokens, long[] prefix, int[] blockTokens, int prompt, int sample) {

        Item(int index, String rid, Long room, String bootstrapHost, int bootstrapPort, int promptTokens,
             int maxTokens, long[] prefix) {
            this(index, rid, room, bootstrapHost, bootstrapPort, promptTokens, maxTokens, prefix,
                    PromptBlocks.NO_TOKENS, index, 0);
        }
    }

    /** A prompt's size in tokens, its prefix-cache blocks and their token ids (for KV events). */
    private record Prompt(int tokens, long[] prefix, int[] blockTokens) {
    }

    /**
     * A body the simulator refuses. On SGLang's {@code /generate} it stands for the {@code ValueError}
     * of {@code GenerateReqInput.normalize_batch_and_arguments} or of the tokenizer manager's request
     * validation (a stream answers 200 with an error event, a whole answer 400); elsewhere a 400.
     */
    static final class BadRequest extends Exception {
        BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    static GenerationRequest parse(Route route, JsonNode body, int defaultMaxTokens) throws BadRequest {
        return parse(route, body, defaultMaxTokens, null);
    }

    static GenerationRequest parse(Route route, JsonNode body, int defaultMaxTokens, String requestId)
            throws BadRequest {
        return parse(route, body, defaultMaxTokens, requestId, Integer.MAX_VALUE);
    }

    /**
     * @param requestId     the request's id when the server names it itself (vLLM: from
     *                      {@code X-Request-Id}); null: SGLang's rid normalisation of the body's {@code rid}
     * @param contextLength the model's context length: longer requests are refused
     */
    static GenerationRequest parse(Route route, JsonNode body, int defaultMaxTokens, String requestId,
                                   int contextLength) throws BadRequest {
        if (body == null || !body.isObject()) {
            throw new BadRequest("request body must be a JSON object");
        }
        List<Prompt> prompts = prompts(route, body);
        int batchSize = prompts.size();
        int n = parallelSampleNum(route, body);
        // GenerateReqInput._handle_parallel_sampling: a single prompt with n > 1 becomes a batch of one
        boolean batch = route == Route.GENERATE ? isGenerateBatch(body) || n > 1
                : route == Route.COMPLETIONS ? batchSize > 1 || isPromptArray(body.path("prompt")) || n > 1
                : n > 1;
        JsonNode ridField = body.get("rid");
        String exchangeRid = requestId != null ? requestId
                : ridField != null && ridField.isTextual() ? ridField.asText()
                : ridField != null && ridField.isArray() && ridField.size() > 0 ? ridField.get(0).asText()
                : uuidHex();
        List<String> rids = requestId != null ? vllmRids(requestId, batchSize * n)
                : sglangRids(ridField, batch, batchSize, n, exchangeRid);
        checkLogprobParams(route, body, n);
        List<Item> items = new ArrayList<>(batchSize * n);
        for (int i = 0; i < batchSize; i++) {
            Prompt prompt = prompts.get(i);
            Long room = room(body.get("bootstrap_room"), i, batchSize);
            String host = text(perItem(body.get("bootstrap_host"), i));
            int port = port(perItem(body.get("bootstrap_port"), i));
            JsonNode explicitMax = explicitMaxTokens(route, body, i);
            checkSampling(route, body, i, explicitMax);
            int maxTokens = explicitMax == null ? defaultMaxTokens : Math.max(0, explicitMax.asInt());
            checkContextLength(prompt.tokens(), explicitMax == null ? null : maxTokens, contextLength);
            for (int k = 0; k < n; k++) {
                int index = i * n + k;
                items.add(new Item(index, rids.get(index), room, host, port, prompt.tokens(), maxTokens,
                        prompt.prefix(), prompt.blockTokens(), i, k));
            }
        }
        boolean logprobs = route == Route.GENERATE ? truthy(perItem(body.get("return_logprob"), 0))
                : truthy(body.get("logprobs"));
        List<String> pd = PD_FIELDS.stream().filter(body::has).toList();
        return new GenerationRequest(route, exchangeRid, batch, body.path("stream").asBoolean(false),
                body.path("stream_options").path("include_usage").asBoolean(false), logprobs,
                Math.max(0, body.path(GIVES_UP_AT_FIELD).asLong(0)), List.copyOf(items), KvTransferParams.of(body), pd);
    }

    private static String uuidHex() {
        return UUID.randomUUID().toString().replace("-", "");
    }

    private static List<String> vllmRids(String requestId, int total) {
        List<String> out = new ArrayList<>(total);
        for (int i = 0; i < total; i++) {
            out.add(total == 1 ? requestId : requestId + "-" + i);
        }
        return out;
    }

    /**
     * The rids SGLang gives the items (sgl-project/sglang@001067fffe33427bee0ed2f007fb7551a1d76b44
     * python/sglang/srt/managers/io_struct.py GenerateReqInput._normalize_rid, and tokenizer_manager.py
     * TokenizerManager._handle_batch_request for n > 1): a single request keeps its rid (a fresh uuid4
     * hex when none); a batch expands a string rid to {@code rid_0, rid_1, ...}, takes a list with
     * exactly one rid per prompt, or gives each a fresh uuid4 hex; with parallel sampling (n > 1) every
     * sample is sent under a fresh uuid4 hex ({@code regenerate_rid}), whatever the body said.
     */
    private static List<String> sglangRids(JsonNode rid, boolean batch, int batchSize, int n, String exchangeRid)
            throws BadRequest {
        int total = batchSize * n;
        if (rid != null && !rid.isNull() && !rid.isTextual() && !rid.isArray()) {
            throw new BadRequest("The rid should be a string or a list of strings.");
        }
        if (rid != null && rid.isArray() && (batch || rid.size() != 1) && rid.size() != batchSize) {
            throw new BadRequest("The specified rids length mismatch with the batch_size for batch processing.");
        }
        List<String> out = new ArrayList<>(total);
        for (int i = 0; i < total; i++) {
            if (n > 1 || rid == null || rid.isNull()) {
                out.add(!batch && n == 1 ? exchangeRid : uuidHex());
            } else if (rid.isArray()) {
                out.add(rid.get(i).asText());
            } else {
                out.add(batch ? rid.asText() + "_" + i : rid.asText());
            }
        }
        return out;
    }

    /**
     * {@code parallel_sample_num}: {@code sampling_params.n} on /generate (all entries of a list must
     * agree), {@code n} on the OpenAI routes (GenerateReqInput._handle_parallel_sampling). No upper cap.
     */
    private static int parallelSampleNum(Route route, JsonNode body) throws BadRequest {
        JsonNode v;
        if (route == Route.GENERATE) {
            JsonNode sp = body.get("sampling_params");
            if (sp != null && sp.isArray()) {
                Integer first = null;
                for (JsonNode p : sp) {
                    int pn = p.path("n").asInt(1);
                    if (first != null && first != pn) {
                        throw new BadRequest("The parallel_sample_num should be the same for all samples in sample "
                                + "params.");
                    }
                    first = pn;
                }
                v = first == null ? null : sp.get(0).get("n");
            } else {
                v = sp == null ? null : sp.get("n");
            }
        } else {
            v = body.get("n");
        }
        int n = v == null || v.isNull() ? 1 : v.asInt(1);
        if (n < 1) {
            throw new BadRequest("n: " + n + " (expected: >= 1)");
        }
        return n;
    }

    /** GenerateReqInput.normalize_param: a per-prompt list of a logprob parameter is refused with n > 1. */
    private static void checkLogprobParams(Route route, JsonNode body, int n) throws BadRequest {
        if (route != Route.GENERATE || n == 1) {
            return;
        }
        for (String p : List.of("return_logprob", "logprob_start_len", "top_logprobs_num")) {
            if (body.path(p).isArray()) {
                throw new BadRequest("Cannot use list " + p + " with parallel_sample_num > 1");
            }
        }
    }

    /** The request's own output limit (max_new_tokens, max_tokens), null when it names none. */
    private static JsonNode explicitMaxTokens(Route route, JsonNode body, int i) {
        JsonNode v;
        if (route == Route.GENERATE) {
            v = perItem(body.get("sampling_params"), i);
            v = v == null ? null : v.get("max_new_tokens");
        } else if (route == Route.COMPLETIONS) {
            // SGLang's CompletionRequest has max_tokens only (sgl-project/sglang
            // python/sglang/srt/entrypoints/openai/protocol.py at 004c82e07d876f6e4a0ad6e15325706b0f478f1a)
            v = body.get("max_tokens");
        } else {
            // chat: max_completion_tokens or max_tokens (ChatCompletionRequest.to_sampling_params, same commit)
            v = body.hasNonNull("max_completion_tokens") ? body.get("max_completion_tokens") : body.get("max_tokens");
        }
        return v == null || v.isNull() ? null : v;
    }

    /** Sampling parameters SGLang's SamplingParams.verify refuses (the ones a gateway might pass through). */
    private static void checkSampling(Route route, JsonNode body, int i, JsonNode maxTokens) throws BadRequest {
        JsonNode sp = route == Route.GENERATE ? perItem(body.get("sampling_params"), i) : body;
        JsonNode t = sp == null ? null : sp.get("temperature");
        if (t != null && t.isNumber() && t.asDouble() < 0) {
            throw new BadRequest("temperature must be non-negative, got " + t.asDouble() + ".");
        }
        if (maxTokens != null && maxTokens.isNumber() && maxTokens.asLong() < 0) {
            throw new BadRequest("max_new_tokens must be at least 0, got " + maxTokens.asLong() + ".");
        }
    }

    /**
     * The tokenizer manager's length checks (sgl-project/sglang@001067fffe33427bee0ed2f007fb7551a1d76b44
     * python/sglang/srt/managers/tokenizer_manager.py TokenizerManager._validate_one_request): an input
     * of at least the context length, or an input plus an explicit max_new_tokens above it.
     */
    static void checkContextLength(int inputTokens, Integer maxNewTokens, int contextLength) throws BadRequest {
        if (inputTokens >= contextLength) {
            throw new BadRequest("The input (" + inputTokens + " tokens) is longer than the model's context length ("
                    + contextLength + " tokens).");
        }
        if (maxNewTokens != null && (long) maxNewTokens + inputTokens > contextLength) {
            throw new BadRequest("Requested token count exceeds the model's maximum context length of " + contextLength
                    + " tokens. You requested a total of " + (maxNewTokens + inputTokens) + " tokens: " + inputTokens
                    + " tokens from the input messages and " + maxNewTokens + " tokens for the completion. Please "
                    + "reduce the number of tokens in the input messages or the completion to fit within the limit.");
        }
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

    /**
     * The room of prompt {@code i} of {@code n}: a list gives one per prompt; one integer R gives
     * R + i (GenerateReqInput._normalize_bootstrap_params); the n parallel samples of a prompt share
     * its room (tokenizer_manager.py _handle_batch_request copies the prompt's tokenized request).
     */
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
        if (!v.isIntegralNumber()) {
            throw new BadRequest("bootstrap_room: " + v + " (expected: an integer)");
        }
        return v.asLong() + i;
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
                String rendered = PromptBlocks.renderChat(messages);
                out.add(new Prompt(tokens, PromptBlocks.ofText(rendered), PromptBlocks.tokens(rendered)));
            }
            default -> throw new IllegalStateException(route.toString());
        }
        return out;
    }

    private static Prompt ofIds(JsonNode ids) {
        return new Prompt(Math.max(1, ids.size()), PromptBlocks.ofIds(ids), PromptBlocks.tokens(ids));
    }

    private static Prompt ofText(String text) {
        return new Prompt(tokensOf(text), PromptBlocks.ofText(text), PromptBlocks.tokens(text));
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
