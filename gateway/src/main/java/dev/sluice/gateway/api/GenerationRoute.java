package dev.sluice.gateway.api;

/** The three POST routes that generate tokens and are dispatched to a prefill/decode pair. */
public enum GenerationRoute {
    CHAT_COMPLETIONS("/v1/chat/completions", "chat_completions"),
    COMPLETIONS("/v1/completions", "completions"),
    GENERATE("/generate", "generate");

    private final String path;
    private final String label;

    GenerationRoute(String path, String label) {
        this.path = path;
        this.label = label;
    }

    public String path() {
        return path;
    }

    /** Bounded metric label. */
    public String label() {
        return label;
    }

    public static GenerationRoute forPath(String path) {
        for (GenerationRoute r : values()) {
            if (r.path.equals(path)) {
                return r;
            }
        }
        return null;
    }
}
