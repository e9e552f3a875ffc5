package dev.sluice.gateway.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.gateway.admission.LearnedRatioCounter;
import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * A client's body through everything the gateway does with it before a worker is chosen: the
 * strict parse for each route, the rendered prompt, the token estimate. Every input ends in a
 * validated request or one 400/413 with a code and a message; nothing else may escape, and the
 * buffer is not consumed or released by the parser.
 */
class RequestParsingFuzzTest {
    private static final LearnedRatioCounter ESTIMATOR = new LearnedRatioCounter(4.0, 4);

    @FuzzTest(maxDuration = "10s")
    void anyBodyParsesOrIsA400(FuzzedDataProvider data) {
        GenerationRoute route = data.pickValue(GenerationRoute.values());
        byte[] body = data.consumeRemainingAsBytes();
        ByteBuf buf = Unpooled.wrappedBuffer(body);
        try {
            GenerationRequest r = GenerationRequest.parse(route, buf);
            assertThat(r.route()).isEqualTo(route);
            assertThat(r.body().isObject()).isTrue();
            assertThat(r.batchSize()).isBetween(0, body.length);
            assertThat(r.parallelSamples()).isPositive();
            PromptText prompt = PromptText.of(r);
            assertThat(ESTIMATOR.estimate(prompt)).isNotNegative();
        } catch (ApiException e) {
            int status = e.error().status().code();
            assertThat(status).isIn(400, 413);
            assertThat(e.error().code()).isNotBlank();
            assertThat(e.error().message()).isNotBlank();
            assertThat(e.error().toJson().toString()).startsWith("{\"error\":");
        } finally {
            assertThat(buf.refCnt()).isEqualTo(1);
            assertThat(buf.readerIndex()).isZero();
            buf.release();
        }
    }
}
