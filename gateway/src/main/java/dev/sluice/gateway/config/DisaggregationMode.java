package dev.sluice.gateway.config;

/** How prefill and decode halves hand KV over; only SGLang's bootstrap protocol exists so far. */
public enum DisaggregationMode {
    /** SGLang: same body to both halves concurrently, paired by bootstrap host/port/room. */
    SGLANG;
}
