package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * Finds the prompt-token count a worker reports ({@code usage.prompt_tokens} on the OpenAI
 * routes, {@code meta_info.prompt_tokens} on /generate), so the token estimator can learn.
 * In a stream it is a byte scan of the chunk, no JSON parse.
 */
final class PromptTokens {
    private static final byte[] KEY = "\"prompt_tokens\":".getBytes(StandardCharsets.US_ASCII);

    private PromptTokens() {
    }

    /** In a parsed response; 0 when absent. */
    static long of(JsonNode doc) {
        JsonNode item = doc.isArray() && !doc.isEmpty() ? doc.get(0) : doc;
        JsonNode usage = item.path("usage").path("prompt_tokens");
        if (usage.isIntegralNumber()) {
            return usage.asLong();
        }
        JsonNode meta = item.path("meta_info").path("prompt_tokens");
        return meta.isIntegralNumber() ? meta.asLong() : 0;
    }

    /** In a raw chunk; 0 when absent. */
    static long find(ByteBuf data) {
        int start = data.readerIndex();
        int end = data.writerIndex() - KEY.length;
        outer:
        for (int i = start; i <= end; i++) {
            for (int k = 0; k < KEY.length; k++) {
                if (data.getByte(i + k) != KEY[k]) {
                    continue outer;
                }
            }
            long n = 0;
            int j = i + KEY.length;
            while (j < data.writerIndex() && data.getByte(j) == ' ') {
                j++;
            }
            boolean digits = false;
            while (j < data.writerIndex() && Character.isDigit(data.getByte(j))) {
                n = n * 10 + (data.getByte(j) - '0');
                j++;
                digits = true;
            }
            return digits ? n : 0;
        }
        return 0;
    }
}
