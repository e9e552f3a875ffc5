package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.health.ProbeOutcome;
import dev.sluice.gateway.health.StallProbes;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.time.Duration;

/**
 * Sends the panic mode's probes ({@link StallProbes.Sender}) as {@link PairProbe}s: a one-token
 * completion of a two-word prompt, {@code stream: false}, to {@code /v1/completions} (served by
 * SGLang's and vLLM's OpenAI servers alike), naming the model clients ask for
 * ({@link ServedModel}). The protocol driver and limits come from the settings in force now.
 */
public final class PairProbes implements StallProbes.Sender {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The probe's prompt: a few tokens, so that it costs the pair next to nothing. */
    static final String PROMPT = "Hello there";

    private final OwnRequestServices own;

    public PairProbes(OwnRequestServices own) {
        this.own = own;
    }

    @Override
    public void send(HealthTable.ProbePair pair, Duration timeout, StallProbes.Verdict done) {
        ExchangeSettings s = own.settings().get();
        GenerationRequest request;
        try {
            request = request(own.model());
        } catch (ApiException e) {
            done.ended(ProbeOutcome.FAILED, "the probe's body was refused: " + e.getMessage());
            return;
        }
        new PairProbe(s.drivers(), own.attemptServices(s), own.loop(), ByteBufAllocator.DEFAULT, request, pair, done)
                .start(timeout);
    }

    /** The probe's request, as a client's would be parsed. */
    static GenerationRequest request(ServedModel model) throws ApiException {
        ObjectNode body = JSON.createObjectNode();
        model.name().ifPresent(m -> body.put("model", m));
        body.put("prompt", PROMPT).put("max_tokens", 1).put("temperature", 0).put("stream", false);
        return GenerationRequest.parse(GenerationRoute.COMPLETIONS, Unpooled.wrappedBuffer(body.toString().getBytes(
                java.nio.charset.StandardCharsets.UTF_8)));
    }
}
