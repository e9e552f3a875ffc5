package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;

import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

/** What the tracing tests share: client trace ids, and the spans and worker requests of one trace. */
final class Traces {
    private Traces() {
    }

    static String newTraceId() {
        byte[] b = new byte[16];
        ThreadLocalRandom.current().nextBytes(b);
        b[0] |= 1; // never all zeros
        return HexFormat.of().formatHex(b);
    }

    static String newSpanId() {
        byte[] b = new byte[8];
        ThreadLocalRandom.current().nextBytes(b);
        b[0] |= 1;
        return HexFormat.of().formatHex(b);
    }

    /** A chat completion {@code body} posted to {@code bed}'s gateway as a sampled child of client trace {@code traceId}. */
    static CompletableFuture<HttpResponse<String>> sendInTrace(PdTestbed bed, String body, String traceId) {
        return bed.http.sendAsync(HttpRequest.newBuilder(bed.uri("/v1/chat/completions")).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .header("traceparent", "00-" + traceId + "-" + newSpanId() + "-01")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The trace's spans once its server span (exported last, when the request ends) has arrived. */
    static List<OtlpReceiver.Received> awaitTrace(OtlpReceiver collector, String traceId) throws InterruptedException {
        eventually(Duration.ofSeconds(10), () -> collector.trace(traceId).stream()
                .anyMatch(s -> s.span().getKind() == io.opentelemetry.proto.trace.v1.Span.SpanKind.SPAN_KIND_SERVER));
        return collector.trace(traceId);
    }

    static OtlpReceiver.Received server(List<OtlpReceiver.Received> trace) {
        return trace.stream().filter(s -> s.span().getKind() == io.opentelemetry.proto.trace.v1.Span.SpanKind.SPAN_KIND_SERVER)
                .findFirst().orElseThrow(() -> new AssertionError("no server span in " + trace));
    }

    static List<OtlpReceiver.Received> named(List<OtlpReceiver.Received> trace, String name) {
        return trace.stream().filter(s -> s.name().equals(name)).toList();
    }

    /** The generation requests {@code w} received within trace {@code traceId}. */
    static List<RecordedRequest> calls(SimWorker w, String traceId) {
        return w.journal().stream().filter(r -> r.method().equals("POST") && r.body() != null
                && r.traceId().filter(traceId::equals).isPresent()).toList();
    }
}
