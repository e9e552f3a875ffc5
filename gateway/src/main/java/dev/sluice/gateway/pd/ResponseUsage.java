package dev.sluice.gateway.pd;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * A worker's non-streamed answer checked to be one JSON object (or a batch list of them) and its
 * token counts read ({@code usage.*_tokens} on the OpenAI routes, {@code meta_info.*_tokens} on
 * /generate; summed over a batch) in one streaming pass: no tree is built for an answer the
 * gateway relays as it is.
 *
 * @param promptTokens     0 when absent
 * @param completionTokens 0 when absent
 */
record ResponseUsage(long promptTokens, long completionTokens) {
    private static final JsonFactory JSON = new JsonFactory();

    /** Throws when {@code bytes[0, length)} is not exactly one JSON object or list. */
    static ResponseUsage scan(byte[] bytes, int length) throws IOException {
        long prompt = 0;
        long completion = 0;
        try (JsonParser p = JSON.createParser(bytes, 0, length)) {
            JsonToken root = p.nextToken();
            if (root != JsonToken.START_OBJECT && root != JsonToken.START_ARRAY) {
                throw new IOException("not a JSON object or list");
            }
            boolean batch = root == JsonToken.START_ARRAY;
            JsonToken t = batch ? p.nextToken() : root;
            while (t != null && t != JsonToken.END_ARRAY) {
                if (t != JsonToken.START_OBJECT) {
                    p.skipChildren(); // a batch element that is not an object: relayed, not counted
                } else {
                    long[] counts = item(p);
                    prompt += counts[0];
                    completion += counts[1];
                }
                if (!batch) {
                    break;
                }
                t = p.nextToken();
            }
            if (p.nextToken() != null) {
                throw new IOException("trailing content after the JSON document");
            }
        }
        return new ResponseUsage(prompt, completion);
    }

    /** At an item's START_OBJECT; leaves the parser at its END_OBJECT. {prompt, completion}. */
    private static long[] item(JsonParser p) throws IOException {
        long[] usage = null;
        long[] meta = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken v = p.nextToken();
            if (v == JsonToken.START_OBJECT && "usage".equals(name)) {
                usage = counts(p);
            } else if (v == JsonToken.START_OBJECT && "meta_info".equals(name)) {
                meta = counts(p);
            } else {
                p.skipChildren();
            }
        }
        return new long[] {pick(usage, meta, 0), pick(usage, meta, 1)};
    }

    private static long pick(long[] usage, long[] meta, int i) {
        if (usage != null && usage[i] >= 0) {
            return usage[i];
        }
        return meta != null && meta[i] >= 0 ? meta[i] : 0;
    }

    /** The two counts of a usage/meta_info object, -1 when absent or not integers. */
    private static long[] counts(JsonParser p) throws IOException {
        long[] out = {-1, -1};
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken v = p.nextToken();
            if (v == JsonToken.VALUE_NUMBER_INT && "prompt_tokens".equals(name)) {
                out[0] = p.getLongValue();
            } else if (v == JsonToken.VALUE_NUMBER_INT && "completion_tokens".equals(name)) {
                out[1] = p.getLongValue();
            } else {
                p.skipChildren();
            }
        }
        return out;
    }
}
