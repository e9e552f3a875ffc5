package dev.sluice.gateway.config;

import java.util.Locale;

/** How prefill and decode halves hand the KV cache over ({@code disaggregation:} in YAML). */
public enum DisaggregationMode {
    /** SGLang: the same body to both halves concurrently, paired by bootstrap host/port/room. */
    SGLANG,
    /** vLLM (NIXL/P2P connectors): prefill first with {@code max_tokens: 1}, its {@code kv_transfer_params} to the decode. */
    VLLM,
    /** No disaggregation: unified workers (SGLang or vLLM) that prefill and decode themselves. */
    NONE;

    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
