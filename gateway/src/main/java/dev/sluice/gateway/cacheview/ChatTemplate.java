package dev.sluice.gateway.cacheview;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A model's chat template (the Jinja in its {@code tokenizer_config.json}, or {@code chat_template.jinja}
 * beside it) rendered in Java as transformers' {@code apply_chat_template} renders it: trim_blocks and
 * lstrip_blocks on, the special tokens of the config as variables, and the globals HF templates call
 * ({@code raise_exception}, {@code strftime_now}, a {@code tojson} with Python's {@code json.dumps}
 * output). Thread-safe: each render has its own interpreter.
 */
public final class ChatTemplate {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX_OUTPUT_CHARS = 8L * 1024 * 1024;

    private final String source;
    private final Map<String, Object> specialTokens;
    private final Jinjava jinjava;

    ChatTemplate(String source, Map<String, Object> specialTokens) {
        this.source = source;
        this.specialTokens = Map.copyOf(specialTokens);
        JinjavaConfig config = JinjavaConfig.newBuilder().withTrimBlocks(true).withLstripBlocks(true)
                .withMaxOutputSize(MAX_OUTPUT_CHARS)
                .withLegacyOverrides(LegacyOverrides.newBuilder().withUseNaturalOperatorPrecedence(true)
                        .withParseWhitespaceControlStrictly(true).withIterateOverMapKeys(true)
                        .withKeepNullableLoopValues(true).build())
                .build();
        this.jinjava = new Jinjava(config);
        jinjava.getGlobalContext().registerFunction(new ELFunctionDefinition("", "raise_exception",
                TemplateGlobals.class, "raiseException", String.class));
        jinjava.getGlobalContext().registerFunction(new ELFunctionDefinition("", "strftime_now",
                TemplateGlobals.class, "strftimeNow", String.class));
        jinjava.getGlobalContext().registerFilter(new PythonJsonFilter());
    }

    /**
     * The template next to {@code tokenizerJson}: {@code tokenizer_config.json}'s {@code chat_template}
     * (a string, or the entry named "default" of a list), else {@code chat_template.jinja}; empty when
     * the model has none.
     */
    public static Optional<ChatTemplate> beside(Path tokenizerJson) throws IOException {
        Path dir = tokenizerJson.toAbsolutePath().getParent();
        Path configFile = dir.resolve("tokenizer_config.json");
        JsonNode config = Files.isRegularFile(configFile) ? JSON.readTree(configFile.toFile()) : JSON.createObjectNode();
        Map<String, Object> tokens = new HashMap<>();
        for (String name : List.of("bos_token", "eos_token", "unk_token", "pad_token")) {
            JsonNode t = config.get(name);
            // a token is written as a string or as an AddedToken object {"content": ...}
            String content = t == null || t.isNull() ? null : t.isTextual() ? t.asText() : t.path("content").asText(null);
            tokens.put(name, content == null ? "" : content);
        }
        String template = templateOf(config.get("chat_template"));
        Path jinja = dir.resolve("chat_template.jinja");
        if (template == null && Files.isRegularFile(jinja)) {
            template = Files.readString(jinja);
        }
        return template == null ? Optional.empty() : Optional.of(new ChatTemplate(template, tokens));
    }

    private static String templateOf(JsonNode t) {
        if (t == null || t.isNull()) {
            return null;
        }
        if (t.isTextual()) {
            return t.asText();
        }
        for (JsonNode named : t) {
            if ("default".equals(named.path("name").asText())) {
                return named.path("template").asText(null);
            }
        }
        return null;
    }

    /**
     * The prompt text of {@code messages} (a JSON array of OpenAI messages) with {@code variables}
     * added (the request's chat_template_kwargs, add_generation_prompt).
     *
     * @throws TemplateFailure when the template raises or fails to render
     */
    public String render(JsonNode messages, Map<String, Object> variables) {
        Map<String, Object> context = new HashMap<>(specialTokens);
        context.putAll(variables);
        context.put("messages", JSON.convertValue(messages, List.class));
        RenderResult r = jinjava.renderForResult(source, context);
        for (TemplateError e : r.getErrors()) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
                throw new TemplateFailure(e.getMessage());
            }
        }
        return r.getOutput();
    }

    /** The template raised ({@code raise_exception}) or could not be rendered here. */
    public static final class TemplateFailure extends RuntimeException {
        TemplateFailure(String message) {
            super(message, null, false, false);
        }
    }
}
