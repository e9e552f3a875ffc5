package dev.sluice.gateway.state;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * One prefill worker's measured rate and when it was measured, as the state file and Redis keep it:
 * {@code {"tokens_per_second": 2480.5, "measured_at": "<instant>"}}.
 */
public record SavedRate(double tokensPerSecond, Instant measuredAt) {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Older measurements are not trusted (the model or the hardware behind a URL may have changed). */
    public static final Duration MAX_AGE = Duration.ofDays(7);

    /** Its JSON form. */
    public ObjectNode toJson() {
        return JSON.createObjectNode().put("tokens_per_second", Math.round(tokensPerSecond * 10) / 10.0)
                .put("measured_at", measuredAt.toString());
    }

    /** The entry in {@code n}, if it is one and not older than {@link #MAX_AGE} at {@code now}. */
    public static Optional<SavedRate> of(JsonNode n, Instant now) {
        double rate = n.path("tokens_per_second").asDouble(Double.NaN);
        Instant at;
        try {
            at = Instant.parse(n.path("measured_at").asText(""));
        } catch (RuntimeException e) {
            return Optional.empty();
        }
        if (!(rate >= 1) || Duration.between(at, now).compareTo(MAX_AGE) > 0) {
            return Optional.empty();
        }
        return Optional.of(new SavedRate(rate, at));
    }

    /** The entries of {@code a} and {@code b}, the newer measurement where both name a worker. */
    public static Map<String, SavedRate> newest(Map<String, SavedRate> a, Map<String, SavedRate> b) {
        Map<String, SavedRate> out = new HashMap<>(a);
        b.forEach((url, r) -> out.merge(url, r, (x, y) -> y.measuredAt.isAfter(x.measuredAt) ? y : x));
        return out;
    }

    /** The rates alone, by worker URL. */
    public static Map<String, Double> rates(Map<String, SavedRate> entries) {
        Map<String, Double> out = new HashMap<>();
        entries.forEach((url, r) -> out.put(url, r.tokensPerSecond));
        return out;
    }
}
