package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.exporter.internal.otlp.traces.TraceRequestMarshaler;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The encoder against the SDK's own OTLP marshaler: the same spans, both outputs decoded with the
 * official opentelemetry-proto classes, must be the same request, field for field, and byte for byte
 * where the order of groups is fixed.
 */
class TraceRequestEncoderTest {
    private static final AttributeKey<String> TEXT = AttributeKey.stringKey("sluice.worker");

    @Test
    void everyKindOfFieldDecodesAsTheSdksExporterSendsIt() throws Exception {
        List<SpanData> spans = spans(Resource.create(Attributes.of(AttributeKey.stringKey("service.name"), "gw")), 1);
        assertSameAsSdk(spans);
    }

    @Test
    void aBatchPastEveryOneByteLengthDecodesTheSame() throws Exception {
        // 600 requests' spans: the request, the resource group and long spans need multi-byte lengths
        List<SpanData> spans = spans(Resource.getDefault(), 600);
        assertThat(spans.size()).isGreaterThan(1000);
        assertSameAsSdk(spans);
    }

    @Test
    void spansOfTwoResourcesAreTwoGroupsEachWithItsSpans() throws Exception {
        List<SpanData> spans = new ArrayList<>(spans(Resource.create(Attributes.of(TEXT, "a")), 2));
        spans.addAll(spans(Resource.create(Attributes.of(TEXT, "b")), 3));
        ExportTraceServiceRequest mine = mine(spans);
        ExportTraceServiceRequest sdk = sdk(spans);
        assertThat(mine.getResourceSpansCount()).isEqualTo(2);
        // the SDK groups through a hash map: compare group by group, whatever their order
        assertThat(mine.getResourceSpansList()).containsExactlyInAnyOrderElementsOf(sdk.getResourceSpansList());
    }

    @Test
    void anEmptyBatchIsAnEmptyRequest() {
        TraceRequestEncoder encoder = new TraceRequestEncoder();
        encoder.encode(List.of());
        assertThat(encoder.size()).isZero();
    }

    private static void assertSameAsSdk(List<SpanData> spans) throws Exception {
        TraceRequestEncoder encoder = new TraceRequestEncoder();
        encoder.encode(spans.subList(0, 1)); // the buffer is reused: a first, smaller batch must not show through
        encoder.encode(spans);
        byte[] mine = Arrays.copyOf(encoder.array(), encoder.size());
        byte[] sdk = sdkBytes(spans);
        ExportTraceServiceRequest decoded = ExportTraceServiceRequest.parseFrom(mine);
        assertThat(decoded).isEqualTo(ExportTraceServiceRequest.parseFrom(sdk));
        ScopeSpans scope = decoded.getResourceSpans(0).getScopeSpans(0);
        assertThat(scope.getSpansCount()).isEqualTo(spans.size());
        assertThat(mine).as("the same bytes as the SDK's exporter").isEqualTo(sdk);
    }

    private static ExportTraceServiceRequest mine(List<SpanData> spans) throws Exception {
        TraceRequestEncoder encoder = new TraceRequestEncoder();
        encoder.encode(spans);
        return ExportTraceServiceRequest.parseFrom(Arrays.copyOf(encoder.array(), encoder.size()));
    }

    private static ExportTraceServiceRequest sdk(List<SpanData> spans) throws Exception {
        return ExportTraceServiceRequest.parseFrom(sdkBytes(spans));
    }

    private static byte[] sdkBytes(List<SpanData> spans) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        TraceRequestMarshaler.create(spans).writeBinaryTo(out);
        return out.toByteArray();
    }

    /** {@code requests} traces of the gateway's shapes, and the field kinds it never sends, through the real SDK. */
    private static List<SpanData> spans(Resource resource, int requests) {
        List<SpanData> ended = new ArrayList<>();
        SpanExporter collect = new SpanExporter() {
            @Override
            public CompletableResultCode export(Collection<SpanData> spans) {
                ended.addAll(spans);
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode flush() {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode shutdown() {
                return CompletableResultCode.ofSuccess();
            }
        };
        try (SdkTracerProvider provider = SdkTracerProvider.builder().setResource(resource)
                .addSpanProcessor(SimpleSpanProcessor.create(collect)).build()) {
            var tracer = provider.get("dev.sluice.gateway", "1.2.3");
            SpanContext client = SpanContext.createFromRemoteParent("4bf92f3577b34da6a3ce929d0e0e4736",
                    "00f067aa0ba902b7", TraceFlags.getSampled(),
                    TraceState.builder().put("vendor", "x:1").put("other", "y").build());
            for (int i = 0; i < requests; i++) {
                Span server = tracer.spanBuilder("chat llama-3-8b").setSpanKind(SpanKind.SERVER)
                        .setParent(i % 2 == 0 ? Context.root().with(Span.wrap(client)) : Context.root())
                        .setAttribute("gen_ai.request.model", "llama-3-8b")
                        .setAttribute("sluice.stream", i % 3 == 0)
                        .setAttribute("gen_ai.request.max_tokens", 64L + i)
                        .setAttribute("negative", -5L)
                        .setAttribute("sluice.ttft_s", 0.125 * i)
                        .setAttribute("empty", "")
                        .setAttribute("unicode", "prompt é – 東京")
                        .setAttribute("long", "x".repeat(300 + i))
                        .setAttribute(AttributeKey.stringArrayKey("gen_ai.response.finish_reasons"), List.of("stop", ""))
                        .setAttribute(AttributeKey.longArrayKey("ints"), List.of(1L, -2L, 300L))
                        .setAttribute(AttributeKey.booleanArrayKey("bools"), List.of(true, false))
                        .setAttribute(AttributeKey.doubleArrayKey("doubles"), List.of(1.5, -0.0))
                        .addLink(SpanContext.create("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331",
                                TraceFlags.getDefault(), TraceState.getDefault()), Attributes.of(TEXT, "link"))
                        .startSpan();
                Context ctx = Context.root().with(server);
                Span call = tracer.spanBuilder("prefill").setParent(ctx).setSpanKind(SpanKind.CLIENT)
                        .setAttribute(TEXT, "http://127.0.0.1:30001").startSpan();
                call.addEvent("failure", Attributes.of(AttributeKey.stringKey("error.type"), "worker_unreachable",
                        AttributeKey.longKey("sluice.attempt"), 1L));
                call.setStatus(StatusCode.ERROR, "connection refused");
                call.end();
                tracer.spanBuilder("kv_handoff").setParent(ctx).startSpan().end();
                server.addEvent("first_token", Attributes.of(AttributeKey.doubleKey("sluice.ttft_s"), 0.3));
                server.addEvent("client_disconnect");
                server.setStatus(i % 2 == 0 ? StatusCode.OK : StatusCode.UNSET);
                server.end(System.currentTimeMillis() + 5, TimeUnit.MILLISECONDS);
            }
        }
        return ended;
    }
}
