package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.health.ProbeOutcome;
import dev.sluice.gateway.health.StallProbes;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import java.time.Duration;
import java.util.function.Supplier;

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

    private final Supplier<ExchangeSettings> settings;
    private final UpstreamPool pool;
    private final AbortSender aborts;
    private final GatewayMetrics metrics;
    private final EventLoop loop;
    private final ServedModel model;

    public PairProbes(Supplier<ExchangeSettings> settings, UpstreamPool pool, AbortSender aborts,
                      GatewayMetrics metrics, EventLoop loop, ServedModel model) {
        this.settings = settings;
        this.pool = pool;
        this.aborts = aborts;
        this.metrics = metrics;
        this.loop = loop;
        this.model = model;
    }

    @Override
    public void send(HealthTable.ProbePair pair, Duration timeout, StallProbes.Verdict done) {
        ExchangeSettings s = settings.get();
        GenerationRequest request;
        try {
            request = request(model);
        } catch (ApiException e) {
            done.ended(ProbeOutcome.FAILED, "the probe's body was refused: " + e.getMessage());
            return;
        }
        AttemptServices services = new AttemptServices(pool, aborts, metrics, s.maxResponseBodyBytes(),
                s.timeouts().abort());
        new PairProbe(s.drivers(), services, loop, ByteBufAllocator.DEFAULT, request, pair, done).start(timeout);
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
