package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One HTTP request as a simulated server received it.
 *
 * @param body the parsed JSON body; {@code null} when the request had no body (GET); a text node
 *             holding the raw body when it was not valid JSON
 */
public record RecordedRequest(String method, String path, JsonNode body, long receivedNanos) {
}
