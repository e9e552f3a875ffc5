package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.nio.charset.StandardCharsets;

/**
 * Finds the token counts a worker reports ({@code usage.prompt_tokens} on the OpenAI
 * routes, {@code meta_info.prompt_tokens} on /generate), so the token estimator can learn.
 * In a stream it is a byte scan of the chunk, no JSON parse.
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

    /**
     * The first value of {@code key} in a raw chunk; 0 when absent. Called for every relayed chunk:
     * the search is Netty's (a first-byte scan over the buffer's memory, then a compare), no copy.
     */
    static long find(ByteBuf data, byte[] key) {
        int at = ByteBufUtil.indexOf(data, data.readerIndex(), data.writerIndex(), key[0]);
        while (at >= 0 && at <= data.writerIndex() - key.length) {
            if (matches(data, at, key)) {
                return number(data, at + key.length);
            }
            at = ByteBufUtil.indexOf(data, at + 1, data.writerIndex(), key[0]);
        }
        return 0;
    }

    private static boolean matches(ByteBuf data, int at, byte[] key) {
        for (int k = 1; k < key.length; k++) {
            if (data.getByte(at + k) != key[k]) {
                return false;
            }
        }
        return true;
    }

    private static long number(ByteBuf data, int j) {
        long n = 0;
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
}
