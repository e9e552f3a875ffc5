package dev.sluice.gateway.cacheview;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** A request's JSON value as the plain Java value (map, list, string, number, boolean, null) a template reads. */
final class ChatTemplateValues {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ChatTemplateValues() {
    }

    static Object of(JsonNode v) {
        return JSON.convertValue(v, Object.class);
    }
}
