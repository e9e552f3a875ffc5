package dev.sluice.gateway.tracing;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.opentelemetry.sdk.trace.samplers.SamplingResult;
import java.util.List;

/**
 * The gateway's sampler: the SDK's {@code Sampler.traceIdRatioBased(ratio)}, wrapped in {@code
 * Sampler.parentBased} when a client's sampled flag is honoured, decided on the trace id as a
 * number. The SDK's takes the id as 32 hex characters and parses its last 16 back: the gateway
 * made that string for every request, sampled or not, only to be parsed. The rule is the SDK's
 * (opentelemetry-java 1.68.0, {@code sdk/trace/.../samplers/TraceIdRatioBasedSampler.java}: the
 * bound {@code ratio * Long.MAX_VALUE}, {@code Long.MAX_VALUE} at 1, {@code Long.MIN_VALUE} at 0;
 * sampled when {@code |low 64 bits| < bound}; {@code ParentBasedSampler}: a valid parent's sampled
 * flag decides); RatioSamplerTest checks both agree on random ids. As a {@link Sampler} it is the
 * SDK's own.
 */
final class RatioSampler implements Sampler {
    private final long idUpperBound;
    private final boolean parentBased;
    private final Sampler sdk;

    RatioSampler(double ratio, boolean parentBased) {
        Sampler ratioSampler = Sampler.traceIdRatioBased(ratio); // refuses a ratio outside [0, 1]
        this.idUpperBound = ratio == 0.0 ? Long.MIN_VALUE : ratio == 1.0 ? Long.MAX_VALUE : (long) (ratio * Long.MAX_VALUE);
        this.parentBased = parentBased;
        this.sdk = parentBased ? Sampler.parentBased(ratioSampler) : ratioSampler;
    }

    /** Whether the trace whose id ends in {@code traceIdLow}, under {@code parent} (invalid: none), is recorded. */
    boolean sampled(SpanContext parent, long traceIdLow) {
        if (parentBased && parent.isValid()) {
            return parent.isSampled();
        }
        return Math.abs(traceIdLow) < idUpperBound;
    }

    @Override
    public SamplingResult shouldSample(Context parentContext, String traceId, String name, SpanKind spanKind,
                                       Attributes attributes, List<LinkData> parentLinks) {
        return sdk.shouldSample(parentContext, traceId, name, spanKind, attributes, parentLinks);
    }

    @Override
    public String getDescription() {
        return sdk.getDescription();
    }
}
