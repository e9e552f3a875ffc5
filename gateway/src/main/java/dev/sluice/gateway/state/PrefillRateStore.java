package dev.sluice.gateway.state;

import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * Where a fleet keeps its measured prefill rates for every replica (Redis, with coordination on): one
 * entry per worker URL, each {@link SavedRate}'s JSON. Asynchronous and bounded; a failure is a missed
 * read or write, never a failed start.
 */
public interface PrefillRateStore {
    /** Every entry, by worker URL (the raw JSON texts). */
    CompletionStage<Map<String, String>> readPrefillRates();

    /** Sets these entries (others are kept). */
    CompletionStage<Void> writePrefillRates(Map<String, String> byUrl);
}
