package dev.sluice.gateway.cacheview;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A prompt's token ids as a real SGLang or vLLM server computes them, from the model's own
 * {@code tokenizer.json} and chat template, to match against the workers' KV events.
 *
 * <p>What the engines do (and so what this does):
 * <ul>
 *   <li>text prompts (completions {@code prompt}, /generate {@code text}) are encoded with the
 *       tokenizer's special tokens (BOS where the model's post-processor adds one): vLLM's
 *       {@code CompletionRequest.add_special_tokens} defaults to true
 *       (vllm-project/vllm@d5dba2d7b0ab9b98096560c69db7126b54b14d79,
 *       vllm/entrypoints/openai/completion/protocol.py); SGLang's tokenizer manager calls
 *       {@code self.tokenizer(texts, **tokenizer_kwargs)} (or {@code encode(t)} for a slow tokenizer)
 *       without {@code add_special_tokens}, whose HF default adds them
 *       (sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py {@code _tokenize_texts},
 *       index id 66058879282; docs/simulator-sources.md).</li>
 *   <li>chat messages are rendered with the chat template and {@code add_generation_prompt=True}, then
 *       encoded WITHOUT adding special tokens (the template writes its own BOS): SGLang calls
 *       {@code apply_chat_template(messages, tokenize=True, add_generation_prompt=True, ...)}, which
 *       tokenizes with {@code add_special_tokens=False}
 *       (sgl-project/sglang@0c078e6f42685e4918bd79a94a025261c7f38942,
 *       python/sglang/srt/entrypoints/openai/serving_chat.py, {@code _apply_jinja_template}); vLLM's
 *       {@code ChatCompletionRequest.add_special_tokens} defaults to false "as the chat template takes care
 *       of adding the special tokens" and {@code add_generation_prompt} to true
 *       (vllm-project/vllm@d5dba2d7b0ab9b98096560c69db7126b54b14d79,
 *       vllm/entrypoints/openai/chat_completion/protocol.py).</li>
 *   <li>prompts given as token ids are used as they are.</li>
 * </ul>
 * Anything it cannot reproduce exactly gives no ids (the local prefix tree routes that request), is
 * counted by {@link UnmatchedPrompt} and logged once per reason: a wrong guess would route by blocks
 * the worker does not hold.
 *
 * <p>Tokenizing is CPU work (docs/cache-affinity.md has the figures): {@link #ofAsync} runs it on a small
 * bounded pool, and a request finding the pool full goes on without ids rather than waiting.
 */
public final class ModelTokenizer implements PromptTokens, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ModelTokenizer.class);
    /** Characters past this are not tokenized: about 8 per token leaves the cut past MAX_TOKENS ids. */
    private static final int MAX_CHARS = 8 * MAX_TOKENS;
    /** Ids dropped at a cut, whose tokens the cut may have split. */
    private static final int CUT_MARGIN = 16;
    /** Request keys the engines hand to the template or the tokenizer that the gateway does not reproduce. */
    private static final Set<String> UNSUPPORTED_CHAT_KEYS = Set.of("tools", "continue_final_message",
            "add_special_tokens", "chat_template", "documents", "reasoning_effort", "mm_processor_kwargs");

    private final HuggingFaceTokenizer tokenizer;
    private final Optional<ChatTemplate> template;
    private final ThreadPoolExecutor pool;
    private final Map<UnmatchedPrompt, AtomicLong> unmatched = new EnumMap<>(UnmatchedPrompt.class);
    private final Map<UnmatchedPrompt, AtomicBoolean> logged = new EnumMap<>(UnmatchedPrompt.class);

    ModelTokenizer(HuggingFaceTokenizer tokenizer, Optional<ChatTemplate> template, int threads, int queue) {
        this.tokenizer = tokenizer;
        this.template = template;
        for (UnmatchedPrompt r : UnmatchedPrompt.values()) {
            unmatched.put(r, new AtomicLong());
            logged.put(r, new AtomicBoolean());
        }
        AtomicInteger n = new AtomicInteger();
        this.pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(queue),
                r -> {
                    Thread t = new Thread(r, "sluice-kv-tokenizer-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
    }

    /**
     * The tokenizer.json at {@code tokenizerJson} and the chat template beside it.
     *
     * @param threads the pool's threads
     * @param queue   prompts waiting for a thread, past which a request goes on without ids
     */
    public static ModelTokenizer load(Path tokenizerJson, int threads, int queue) throws IOException {
        HuggingFaceTokenizer t = HuggingFaceTokenizer.builder().optTokenizerPath(tokenizerJson)
                .optTruncation(false).optPadding(false).build();
        Optional<ChatTemplate> template = ChatTemplate.beside(tokenizerJson);
        if (template.isEmpty()) {
            log.warn("kv events tokenizer={} chat_template=none (chat prompts are routed by the local prefix tree)",
                    tokenizerJson);
        } else {
            log.info("kv events tokenizer={} chat_template=loaded threads={} queue={}", tokenizerJson, threads, queue);
        }
        return new ModelTokenizer(t, template, threads, queue);
    }

    /** On the pool; full: at once, empty. Never fails. */
    @Override
    public CompletableFuture<int[]> ofAsync(String route, JsonNode body) {
        try {
            return CompletableFuture.supplyAsync(() -> of(route, body), pool);
        } catch (RejectedExecutionException saturated) {
            return CompletableFuture.completedFuture(miss(UnmatchedPrompt.SATURATED, "tokenizer pool full"));
        }
    }

    /** Blocking (CPU work): call it off the event loop, through {@link #ofAsync}. */
    @Override
    public int[] of(String route, JsonNode body) {
        if (route == null || body == null || !body.isObject()) {
            return new int[0];
        }
        try {
            return switch (route) {
                case "chat_completions" -> chat(body);
                case "completions" -> body.hasNonNull("add_special_tokens")
                        ? miss(UnmatchedPrompt.UNSUPPORTED, "request key add_special_tokens")
                        : prompt(body.get("prompt"));
                case "generate" -> {
                    JsonNode text = body.get("text");
                    yield text != null && !text.isNull() ? prompt(text) : prompt(body.get("input_ids"));
                }
                default -> new int[0];
            };
        } catch (ChatTemplate.TemplateFailure e) {
            return miss(UnmatchedPrompt.TEMPLATE, e.getMessage());
        } catch (RuntimeException e) {
            return miss(UnmatchedPrompt.TOKENIZER, String.valueOf(e));
        }
    }

    private int[] prompt(JsonNode p) {
        if (p == null || p.isNull()) {
            return new int[0];
        }
        if (p.isTextual()) {
            return encode(p.asText(), true);
        }
        if (!p.isArray() || p.isEmpty()) {
            return new int[0];
        }
        JsonNode first = p.get(0);
        if (first.isTextual() || first.isArray()) {
            return prompt(first); // of a batch only the first prompt counts, as in SimTokenizer
        }
        int n = Math.min(p.size(), MAX_TOKENS);
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = (int) p.get(i).asLong();
        }
        return ids;
    }

    private int[] chat(JsonNode body) {
        if (template.isEmpty()) {
            return miss(UnmatchedPrompt.NO_TEMPLATE, "the model has no chat template");
        }
        for (Iterator<String> keys = body.fieldNames(); keys.hasNext(); ) {
            String k = keys.next();
            if (UNSUPPORTED_CHAT_KEYS.contains(k) && !body.get(k).isNull()) {
                return miss(UnmatchedPrompt.UNSUPPORTED, "request key " + k);
            }
        }
        JsonNode messages = body.path("messages");
        for (JsonNode m : messages) {
            JsonNode content = m.get("content");
            // array content is rewritten by each engine by its guess of the template's content format
            if (content != null && !content.isNull() && !content.isTextual() || m.has("tool_calls")) {
                return miss(UnmatchedPrompt.UNSUPPORTED, "message content parts or tool_calls");
            }
        }
        Map<String, Object> vars = new HashMap<>();
        JsonNode kwargs = body.get("chat_template_kwargs");
        if (kwargs != null && kwargs.isObject()) {
            kwargs.fields().forEachRemaining(e -> vars.put(e.getKey(), ChatTemplateValues.of(e.getValue())));
        }
        // SGLang always renders with add_generation_prompt=True, vLLM takes the request's: only the common case
        JsonNode agp = body.get("add_generation_prompt");
        if (agp != null && !agp.isNull() && !agp.asBoolean(true)) {
            return miss(UnmatchedPrompt.UNSUPPORTED, "request key add_generation_prompt: false");
        }
        vars.put("add_generation_prompt", true);
        return encode(template.get().render(messages, vars), false);
    }

    private int[] encode(String text, boolean addSpecialTokens) {
        boolean cut = text.length() > MAX_CHARS;
        long[] ids = tokenizer.encode(cut ? text.substring(0, MAX_CHARS) : text, addSpecialTokens, false).getIds();
        int n = Math.min(ids.length - (cut ? CUT_MARGIN : 0), MAX_TOKENS);
        int[] out = new int[Math.max(0, n)];
        for (int i = 0; i < out.length; i++) {
            out[i] = (int) ids[i];
        }
        return out;
    }

    private int[] miss(UnmatchedPrompt reason, String detail) {
        unmatched.get(reason).incrementAndGet();
        if (logged.get(reason).compareAndSet(false, true)) {
            log.warn("kv events prompt unmatched reason={} detail=\"{}\" (such prompts use the local prefix tree; "
                    + "logged once, counted in sluice_kv_events_prompts_unmatched)", reason.label(), detail);
        }
        return new int[0];
    }

    /** Prompts that got no ids for {@code reason} since start. */
    public long unmatched(UnmatchedPrompt reason) {
        return unmatched.get(reason).get();
    }

    @Override
    public void close() {
        pool.shutdownNow();
        tokenizer.close();
    }
}
