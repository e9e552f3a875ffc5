package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * One HTTP request as a simulated server received it.
 *
 * @param body    the parsed JSON body; {@code null} when the request had no body (GET); a text node
 *                holding the raw body when it was not valid JSON
 * @param headers the request headers, names in lower case, the first value of each
 */
public record RecordedRequest(String method, String path, JsonNode body, long receivedNanos,
                              Map<String, String> headers) {

    public RecordedRequest {
        Map<String, String> lower = new LinkedHashMap<>();
        if (headers != null) {
            headers.forEach((k, v) -> lower.putIfAbsent(k.toLowerCase(Locale.ROOT), v));
        }
        headers = Map.copyOf(lower);
    }

    /** A request recorded without its headers. */
    public RecordedRequest(String method, String path, JsonNode body, long receivedNanos) {
        this(method, path, body, receivedNanos, Map.of());
    }

    /**
     * The W3C {@code traceparent} the request came with ({@code 00-<trace id>-<parent span id>-<flags>}):
     * the trace a real SGLang or vLLM would join with its own spans. Empty when it had none.
     */
    public Optional<String> traceparent() {
        return header("traceparent");
    }

    /** The trace id of {@link #traceparent()}, if it had one. */
    public Optional<String> traceId() {
        return traceparent().filter(t -> t.length() >= 55).map(t -> t.substring(3, 35));
    }

    /** The parent span id of {@link #traceparent()} (the caller's span), if it had one. */
    public Optional<String> parentSpanId() {
        return traceparent().filter(t -> t.length() >= 55).map(t -> t.substring(36, 52));
    }

    /** The first value of a header, by case-insensitive name (e.g. {@code "X-Request-Id"}). */
    public Optional<String> header(String name) {
        return Optional.ofNullable(headers.get(name.toLowerCase(Locale.ROOT)));
    }
}
