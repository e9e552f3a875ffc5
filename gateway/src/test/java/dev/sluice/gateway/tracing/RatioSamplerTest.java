package dev.sluice.gateway.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.opentelemetry.sdk.trace.samplers.SamplingDecision;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The gateway's numeric sampler decides as the SDK's ratio (and parent-based) sampler does on the hex id. */
class RatioSamplerTest {
    @Test
    void decidesAsTheSdkOnRandomIdsAtEveryRatioWithAndWithoutAClientParent() {
        SplittableRandom random = new SplittableRandom(7);
        for (double ratio : new double[] {0, 1e-6, 0.1, 0.25, 0.5, 0.9, 1}) {
            for (boolean parentBased : new boolean[] {false, true}) {
                RatioSampler mine = new RatioSampler(ratio, parentBased);
                Sampler sdk = parentBased ? Sampler.parentBased(Sampler.traceIdRatioBased(ratio))
                        : Sampler.traceIdRatioBased(ratio);
                int sampled = 0;
                for (int i = 0; i < 20_000; i++) {
                    long high = random.nextLong();
                    long bound = ratio == 0 ? Long.MIN_VALUE : ratio == 1 ? Long.MAX_VALUE : (long) (ratio * Long.MAX_VALUE);
                    long[] edges = {bound, bound - 1, bound + 1, -bound, -bound + 1, -bound - 1, Long.MIN_VALUE, 0};
                    long low = i < edges.length ? edges[i] : random.nextLong(); // the bound's edges, then random ids
                    String hex = TraceIds.hex(high, low);
                    SpanContext parent = switch (i % 3) {
                        case 0 -> SpanContext.getInvalid();
                        case 1 -> SpanContext.createFromRemoteParent(hex, "00f067aa0ba902b7", TraceFlags.getSampled(),
                                TraceState.getDefault());
                        default -> SpanContext.createFromRemoteParent(hex, "00f067aa0ba902b7", TraceFlags.getDefault(),
                                TraceState.getDefault());
                    };
                    Context context = parent.isValid() ? Context.root().with(Span.wrap(parent)) : Context.root();
                    boolean expected = sdk.shouldSample(context, hex, "chat", SpanKind.SERVER, Attributes.empty(),
                            List.of()).getDecision() == SamplingDecision.RECORD_AND_SAMPLE;
                    assertThat(mine.sampled(parent, low)).as("ratio %s parent-based %s id %s parent %s", ratio,
                            parentBased, hex, parent).isEqualTo(expected);
                    sampled += expected ? 1 : 0;
                }
                if (ratio == 0.5 && !parentBased) {
                    assertThat(sampled).as("about half").isBetween(9_000, 11_000);
                }
            }
        }
    }

    @Test
    void theRootDecidesOnTheLowHalfOfAClientsTraceIdAndKeepsItsTraceState() {
        RatioSampler half = new RatioSampler(0.5, false);
        TraceState state = TraceState.builder().put("vendor", "x:1").build();
        // high half 0 (would be sampled), low half all ones but the sign (not sampled at 0.5): the low half decides
        String notSampled = "00000000000000007fffffffffffffff";
        String sampled = "7fffffffffffffff0000000000000001";
        for (String id : new String[] {notSampled, sampled}) {
            SpanContext client = SpanContext.createFromRemoteParent(id, "00f067aa0ba902b7", TraceFlags.getSampled(), state);
            TraceRoot root = TraceRoot.decide(half, Context.root().with(Span.wrap(client)), "chat");
            boolean sdk = Sampler.traceIdRatioBased(0.5).shouldSample(Context.root().with(Span.wrap(client)), id, "chat",
                    SpanKind.SERVER, Attributes.empty(), List.of()).getDecision() == SamplingDecision.RECORD_AND_SAMPLE;
            assertThat(root.sampled()).as(id).isEqualTo(sdk).isEqualTo(id.equals(sampled));
            assertThat(root.traceIdHex()).isEqualTo(id);
            assertThat(root.traceState()).isEqualTo(state);
        }
    }
}
