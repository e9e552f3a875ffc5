package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.tracing.Traces.awaitTrace;
import static dev.sluice.gateway.tracing.Traces.calls;
import static dev.sluice.gateway.tracing.Traces.named;
import static dev.sluice.gateway.tracing.Traces.newSpanId;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static dev.sluice.gateway.tracing.Traces.server;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * vLLM's handoff traced: the prefill leg and then the decode leg are each a span of the request's
 * trace, each leg's worker gets a traceparent naming its own span, and the decode span says whether
 * the KV was handed over (kv_transfer_params) or recomputed.
 */
class TracingVllmEndToEndTest {
    @Test
    void bothLegsAreSpansAndBothVllmWorkersJoinTheClientsTrace() throws Exception {
        try (OtlpReceiver collector = OtlpReceiver.start(OtlpReceiver.Transport.GRPC)) {
            PdTestbed bed = PdTestbed.start(SimMode.VLLM, 1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)),
                    "{connect: 2s, first_token: 10s, idle_stream: 5s}", "health: {generate_interval: 200ms}\n"
                            + "tracing:\n  otlp: { endpoint: \"" + collector.endpoint() + "\", protocol: grpc }\n");
            try {
                String traceId = newTraceId();
                HttpResponse<String> res = bed.http.send(HttpRequest.newBuilder(bed.uri("/v1/chat/completions"))
                        .header("Content-Type", "application/json")
                        .header("traceparent", "00-" + traceId + "-" + newSpanId() + "-01")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"sim-model\",\"stream\":true,"
                                + "\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
                List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
                var server = server(trace);
                assertThat(server.hasEvent("first_token")).isTrue();
                var prefill = named(trace, "prefill");
                var decode = named(trace, "decode");
                assertThat(prefill).as("%s", trace).hasSize(1);
                assertThat(decode).hasSize(1);
                assertThat(decode.get(0).attr("sluice.vllm.kv_handoff")).hasValue("transferred");
                assertThat(prefill.get(0).span().getEndTimeUnixNano())
                        .as("the prefill leg ends before the decode leg starts")
                        .isLessThanOrEqualTo(decode.get(0).span().getStartTimeUnixNano());
                SimWorker p = bed.cluster.prefillWorkers().get(0);
                SimWorker d = bed.cluster.decodeWorkers().get(0);
                RecordedRequest toPrefill = calls(p, traceId).get(0);
                RecordedRequest toDecode = calls(d, traceId).get(0);
                assertThat(toPrefill.parentSpanId()).hasValue(prefill.get(0).spanId());
                assertThat(toDecode.parentSpanId()).hasValue(decode.get(0).spanId());
            } finally {
                bed.close();
            }
        }
    }
}
