package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;

/**
 * Finds the token counts a worker reports ({@code usage.prompt_tokens} on the OpenAI
 * routes, {@code meta_info.prompt_tokens} on /generate), so the token estimator can learn.
 * In a stream the scan of whole events hands it each event that names a count: a byte scan, no
 * JSON parse.
 */
final class PromptTokens {
    static final byte[] PROMPT = "\"prompt_tokens\":".getBytes(StandardCharsets.US_ASCII);
    static final byte[] COMPLETION = "\"completion_tokens\":".getBytes(StandardCharsets.US_ASCII);

    private PromptTokens() {
    }

    /** {@code field} ("prompt_tokens" or "completion_tokens") in a parsed response, summed over a batch; 0 when absent. */
    static long of(JsonNode doc, String field) {
        long sum = 0;
        for (JsonNode item : doc.isArray() ? doc : java.util.List.of(doc)) {
            JsonNode usage = item.path("usage").path(field);
            JsonNode meta = item.path("meta_info").path(field);
            sum += usage.isIntegralNumber() ? usage.asLong() : meta.isIntegralNumber() ? meta.asLong() : 0;
        }
        return sum;
    }

    /** The first value of {@code key} in one whole event, {@code event[from, to)}; 0 when absent. */
    static long find(byte[] event, int from, int to, byte[] key) {
        outer:
        for (int i = from, end = to - key.length; i <= end; i++) {
            for (int k = 0; k < key.length; k++) {
                if (event[i + k] != key[k]) {
                    continue outer;
                }
            }
            long n = 0;
            int j = i + key.length;
            while (j < to && event[j] == ' ') {
                j++;
            }
            boolean digits = false;
            while (j < to && event[j] >= '0' && event[j] <= '9') {
                n = n * 10 + (event[j] - '0');
                j++;
                digits = true;
            }
            return digits ? n : 0;
        }
        return 0;
    }
}
