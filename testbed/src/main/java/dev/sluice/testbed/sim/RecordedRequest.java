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

    /** The first value of a header, by case-insensitive name (e.g. {@code "X-Request-Id"}). */
    public Optional<String> header(String name) {
        return Optional.ofNullable(headers.get(name.toLowerCase(Locale.ROOT)));
    }
}
