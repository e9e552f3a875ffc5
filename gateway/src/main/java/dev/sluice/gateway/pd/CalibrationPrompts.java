package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * The calibration's prompts: common English words drawn at random, from a seed of its own each start, so
 * that no prompt shares a prefix with another or with an earlier run's (a prefix-cache hit would skip the
 * very compute being timed). Sized by the gateway's bytes-per-token estimate; the exact count comes back
 * in the worker's answer. A one-token, non-streamed {@code /v1/completions} (served by SGLang's and
 * vLLM's OpenAI servers alike), naming the model clients ask for.
 */
final class CalibrationPrompts {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Words most tokenizers keep whole (one token with the space before it). */
    private static final String[] WORDS = ("time year people way day man thing woman life child world school "
            + "state family student group country problem hand part place case week company system program "
            + "question work government number night point home water room mother area money story fact month "
            + "lot right study book eye job word business issue side kind head house service friend father power "
            + "hour game line end member law car city community name president team minute idea kid body "
            + "information back parent face others level office door health person art war history party result "
            + "change morning reason research girl guy moment air teacher force education").split(" ");

    private final SplittableRandom random;

    CalibrationPrompts(long seed) {
        this.random = new SplittableRandom(seed);
    }

    /** A prompt of about {@code tokens} tokens at {@code bytesPerToken}. */
    String text(long tokens, double bytesPerToken) {
        long bytes = (long) Math.max(1, tokens * bytesPerToken);
        StringBuilder b = new StringBuilder((int) Math.min(Integer.MAX_VALUE - 16, bytes + 16));
        while (b.length() < bytes) {
            if (b.length() > 0) {
                b.append(' ');
            }
            b.append(WORDS[random.nextInt(WORDS.length)]);
        }
        return b.toString();
    }

    /** The request, as a client's would be parsed. */
    static GenerationRequest request(ServedModel model, String prompt) throws ApiException {
        ObjectNode body = JSON.createObjectNode();
        model.name().ifPresent(m -> body.put("model", m));
        body.put("prompt", prompt).put("max_tokens", 1).put("temperature", 0).put("stream", false);
        return GenerationRequest.parse(GenerationRoute.COMPLETIONS,
                Unpooled.wrappedBuffer(body.toString().getBytes(StandardCharsets.UTF_8)));
    }
}
