package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static dev.sluice.gateway.tracing.Traces.calls;
import static dev.sluice.gateway.tracing.Traces.newSpanId;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Who decides whether a request is recorded: with {@code honor_client_sampling: false} (the
 * default) the gateway's ratio does, and a client's sampled flag cannot force a trace; with it
 * true, the client's flag does. Either way the client's trace id is continued to the workers.
 */
class TracingSamplingEndToEndTest {
    private static final String PLAIN = "{\"model\":\"sim-model\",\"max_tokens\":2,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";

    private static PdTestbed gateway(OtlpReceiver collector, boolean honor) throws Exception {
        return PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)),
                "{connect: 2s, first_token: 10s, idle_stream: 10s}", "tracing:\n  otlp: { endpoint: \""
                        + collector.endpoint() + "\", protocol: http/protobuf }\n  sample_ratio: 0\n"
                        + "  honor_client_sampling: " + honor + "\n");
    }

    private static String sampledRequest(PdTestbed bed, String traceId) throws Exception {
        HttpResponse<String> res = bed.http.send(HttpRequest.newBuilder(bed.uri("/v1/chat/completions"))
                .header("Content-Type", "application/json")
                .header("traceparent", "00-" + traceId + "-" + newSpanId() + "-01")
                .POST(HttpRequest.BodyPublishers.ofString(PLAIN)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).isEqualTo(200);
        RecordedRequest toDecode = calls(bed.decode(), traceId).get(0);
        return toDecode.traceparent().orElseThrow();
    }

    @Test
    void aClientsSampledFlagIsNotObeyedByDefault() throws Exception {
        try (OtlpReceiver collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP)) {
            PdTestbed bed = gateway(collector, false);
            try {
                String traceId = newTraceId();
                String toWorker = sampledRequest(bed, traceId);
                // the trace is continued (same id) but not recorded: the worker is told so (flag 00)
                assertThat(toWorker).startsWith("00-" + traceId + "-").endsWith("-00");
                String control = newTraceId();
                sampledRequest(bed, control);
                Thread.sleep(1_500); // three export intervals: anything recorded would have arrived
                assertThat(collector.trace(traceId)).isEmpty();
                assertThat(collector.spans()).isEmpty();
            } finally {
                bed.close();
            }
        }
    }

    @Test
    void withHonorClientSamplingTheClientsFlagDecides() throws Exception {
        try (OtlpReceiver collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP)) {
            PdTestbed bed = gateway(collector, true);
            try {
                String traceId = newTraceId();
                String toWorker = sampledRequest(bed, traceId);
                assertThat(toWorker).startsWith("00-" + traceId + "-").endsWith("-01");
                assertThat(eventually(Duration.ofSeconds(10), () -> !collector.trace(traceId).isEmpty())).isTrue();
            } finally {
                bed.close();
            }
        }
    }
}
