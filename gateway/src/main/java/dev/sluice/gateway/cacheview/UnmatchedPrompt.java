package dev.sluice.gateway.cacheview;

import java.util.Locale;

/** Why a prompt got no token ids from the model's tokenizer (it is then routed by the local prefix tree). */
public enum UnmatchedPrompt {
    /** A chat request and the model has no chat template. */
    NO_TEMPLATE,
    /** The template raised ({@code raise_exception}) or could not be rendered by the gateway's Jinja. */
    TEMPLATE,
    /** A request the engines render with inputs the gateway does not reproduce (tools, content parts, ...). */
    UNSUPPORTED,
    /** The tokenizer pool was full: the request went on without waiting. */
    SATURATED,
    /** The tokenizer failed. */
    TOKENIZER;

    private final String label = name().toLowerCase(Locale.ROOT);

    /** The metric label and the log's reason. */
    public String label() {
        return label;
    }
}
