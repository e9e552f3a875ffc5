package dev.sluice.gateway.cacheview;

import java.util.List;

/**
 * One published {@code KVEventBatch}: its events in order, and the DP rank that published it
 * (-1 when the batch does not say).
 */
public record KvEventBatch(double ts, List<KvEvent> events, int dpRank) {
    public KvEventBatch {
        events = List.copyOf(events);
    }
}
