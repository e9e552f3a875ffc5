package dev.sluice.gateway.metrics;

import dev.sluice.gateway.cacheview.ModelTokenizer;
import dev.sluice.gateway.cacheview.UnmatchedPrompt;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Meters of the model's tokenizer for the KV event view ({@code routing.kv_events.tokenizer: hf}):
 * the prompts that got no token ids, by reason (they were routed by the local prefix tree).
 */
public final class ModelTokenizerMetrics {
    private ModelTokenizerMetrics() {
    }

    public static void bind(MeterRegistry registry, ModelTokenizer tokenizer) {
        for (UnmatchedPrompt r : UnmatchedPrompt.values()) {
            FunctionCounter.builder("sluice_kv_events_prompts_unmatched", tokenizer, t -> t.unmatched(r))
                    .description("Prompts the model's tokenizer gave no token ids for (routed by the local prefix "
                            + "tree): no_template, template (raised or not renderable here), unsupported (tools, "
                            + "content parts, ...), saturated (tokenizer pool full), tokenizer (failed)")
                    .tag("reason", r.label()).register(registry);
        }
    }
}
