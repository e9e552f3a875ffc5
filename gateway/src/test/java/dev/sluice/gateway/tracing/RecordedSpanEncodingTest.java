package dev.sluice.gateway.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.tracing.otlp.TraceRequestEncoder;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.exporter.internal.otlp.traces.TraceRequestMarshaler;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.trace.v1.Span.SpanKind;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The gateway's own spans on the wire: what the encoder writes from a {@link RecordedSpan}'s fields
 * is what the SDK's OTLP marshaler writes from the same span read as SpanData (attribute order
 * aside), and
 * decoded with the official classes it is the trace the request made (every span, its parent, its
 * events, the client's trace and tracestate).
 */
class RecordedSpanEncodingTest {
    private static final Object KEY = new Object();

    @Test
    void aPdRequestWithARetryAndAFailureIsWrittenAsTheSdkWritesIt() throws Exception {
        List<RecordedSpan> ended = new ArrayList<>();
        SpanRecorder recorder = new SpanRecorder(Resource.getDefault().merge(Resource.create(
                Attributes.of(AttributeKey.stringKey("service.name"), "gw"))), ended::add);
        SpanContext client = SpanContext.createFromRemoteParent("4bf92f3577b34da6a3ce929d0e0e4736",
                "00f067aa0ba902b7", TraceFlags.getSampled(), TraceState.builder().put("vendor", "x:1").build());
        RequestTrace t = RequestTrace.start(recorder, Sampler.alwaysOn(), Context.root().with(Span.wrap(client)),
                new RequestTrace.Facts("chat", "llama", 64, "/v1/chat/completions", "rid1", true), System.nanoTime());
        List<String> headers = new ArrayList<>();
        t.admissionStarted("standard", "tenant-é", 42);
        t.admitted("http://p:1", "http://d:2", 1_500_000);
        t.workerCall(KEY, RequestTrace.Call.PREFILL, "p:1", "p", 1, "rid1-1", (k, v) -> headers.add(k + ": " + v));
        t.callAttribute(KEY, RequestTrace.Call.PREFILL, "sluice.sglang.bootstrap_room", 1234567890123L);
        t.workerCall(KEY, RequestTrace.Call.DECODE, "d:2", "d", 2, "rid1-1", (k, v) -> headers.add(k + ": " + v));
        t.failed(KEY, "worker_unreachable", "connection refused", null);
        t.retrying(KEY, "worker_unreachable", 20_000_000);
        t.aborted(KEY, "retry");
        Object second = new Object();
        t.admissionStarted("standard", "tenant-é", 42);
        t.admitted("http://p:1", "http://d:3", 0);
        t.workerCall(second, RequestTrace.Call.PREFILL, "p:1", "p", 1, "rid1-2", (k, v) -> headers.add(k + ": " + v));
        t.workerCall(second, RequestTrace.Call.DECODE, "d:3", "d", 3, "rid1-2", (k, v) -> headers.add(k + ": " + v));
        t.prefillDone(second);
        t.firstToken(second, 300_000_000);
        t.responseEnded(second, true);
        t.finishReasons(List.of("stop"));
        t.inputTokens(40);
        t.clientDisconnected();
        t.end(200, "ok", 16, "");

        assertThat(ended).extracting(RecordedSpan::getName).containsExactlyInAnyOrder("admission", "admission",
                "prefill", "decode", "prefill", "kv_handoff", "decode", "chat llama");
        List<SpanData> batch = new ArrayList<>(ended);
        TraceRequestEncoder encoder = new TraceRequestEncoder();
        encoder.encode(batch);
        byte[] mine = Arrays.copyOf(encoder.array(), encoder.size());
        ByteArrayOutputStream sdk = new ByteArrayOutputStream();
        TraceRequestMarshaler.create(batch).writeBinaryTo(sdk);
        // the same request as the SDK's marshaler writes: the same fields, values and sizes; only the order of a
        // span's and an event's attributes differs (insertion order against the SDK's sorted copy), which OTLP
        // leaves free
        assertThat(mine).hasSameSizeAs(sdk.toByteArray());
        assertThat(sortedAttributes(ExportTraceServiceRequest.parseFrom(mine)))
                .isEqualTo(sortedAttributes(ExportTraceServiceRequest.parseFrom(sdk.toByteArray())));

        var spans = ExportTraceServiceRequest.parseFrom(mine).getResourceSpans(0).getScopeSpans(0).getSpansList();
        var server = spans.stream().filter(s -> s.getKind() == SpanKind.SPAN_KIND_SERVER).findFirst().orElseThrow();
        String serverId = HexFormat.of().formatHex(server.getSpanId().toByteArray());
        assertThat(HexFormat.of().formatHex(server.getParentSpanId().toByteArray())).isEqualTo("00f067aa0ba902b7");
        assertThat(server.getTraceState()).isEqualTo("vendor=x:1");
        assertThat(server.getFlags()).as("sampled, its parent remote").isEqualTo(0x301);
        assertThat(server.getEventsList()).extracting(e -> e.getName())
                .containsExactly("retry", "first_token", "client_disconnect");
        for (var s : spans) {
            assertThat(HexFormat.of().formatHex(s.getTraceId().toByteArray())).isEqualTo(client.getTraceId());
            assertThat(s.getEndTimeUnixNano()).isGreaterThanOrEqualTo(s.getStartTimeUnixNano());
            if (s != server) {
                assertThat(HexFormat.of().formatHex(s.getParentSpanId().toByteArray())).isEqualTo(serverId);
            }
        }
        // every worker call named its own span in its traceparent, and carried the client's tracestate
        var calls = spans.stream().filter(s -> s.getKind() == SpanKind.SPAN_KIND_CLIENT)
                .map(s -> "traceparent: 00-" + client.getTraceId() + "-"
                        + HexFormat.of().formatHex(s.getSpanId().toByteArray()) + "-01").toList();
        assertThat(headers.stream().filter(h -> h.startsWith("traceparent")).toList())
                .containsExactlyInAnyOrderElementsOf(calls);
        assertThat(headers.stream().filter(h -> h.startsWith("tracestate"))).containsOnly("tracestate: vendor=x:1");
    }

    private static ExportTraceServiceRequest sortedAttributes(ExportTraceServiceRequest r) {
        var b = r.toBuilder();
        for (var rs : b.getResourceSpansBuilderList()) {
            for (var ss : rs.getScopeSpansBuilderList()) {
                for (var span : ss.getSpansBuilderList()) {
                    var sorted = new ArrayList<>(span.getAttributesList());
                    sorted.sort(java.util.Comparator.comparing(kv -> kv.getKey()));
                    span.clearAttributes().addAllAttributes(sorted);
                    for (var event : span.getEventsBuilderList()) {
                        var byKey = new ArrayList<>(event.getAttributesList());
                        byKey.sort(java.util.Comparator.comparing(kv -> kv.getKey()));
                        event.clearAttributes().addAllAttributes(byKey);
                    }
                }
            }
        }
        return b.build();
    }

    @Test
    void anUnsampledRequestRecordsNothingAndNamesItsOwnSpanWithFlagZero() {
        List<RecordedSpan> ended = new ArrayList<>();
        RequestTrace t = RequestTrace.start(new SpanRecorder(Resource.getDefault(), ended::add), Sampler.alwaysOff(),
                Context.root(), new RequestTrace.Facts("chat", null, 0, "/v1/chat/completions", "r", false),
                System.nanoTime());
        List<String> headers = new ArrayList<>();
        t.workerCall(KEY, RequestTrace.Call.UNIFIED, "w:1", "w", 1, "r-1", (k, v) -> headers.add(v.toString()));
        t.end(200, "ok", 1, "");
        assertThat(ended).isEmpty();
        assertThat(t.sampledTraceId()).isNull();
        assertThat(t.logIds()).matches(" trace_id=[0-9a-f]{32} span_id=[0-9a-f]{16}");
        String spanId = t.logIds().substring(t.logIds().length() - 16);
        assertThat(headers).singleElement().asString().matches("00-[0-9a-f]{32}-" + spanId + "-00");
    }
}
