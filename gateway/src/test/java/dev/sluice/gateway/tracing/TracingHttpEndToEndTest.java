package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static dev.sluice.gateway.tracing.Traces.awaitTrace;
import static dev.sluice.gateway.tracing.Traces.calls;
import static dev.sluice.gateway.tracing.Traces.named;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static dev.sluice.gateway.tracing.Traces.server;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Tracing over OTLP/HTTP (http/protobuf) to a receiver that decodes the wire format; a request
 * admission refuses is a trace too; and a collector that goes away costs requests nothing: they are
 * answered as before, the spans lost are counted. (The last test stops the collector.)
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TracingHttpEndToEndTest {
    private static final String CHAT = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":4,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private static OtlpReceiver collector;
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                        .withKvWait(Duration.ofSeconds(30)), "{connect: 2s, first_token: 20s, idle_stream: 10s}",
                "tracing:\n  otlp: { endpoint: \"" + collector.endpoint() + "\", protocol: http/protobuf, timeout: 300ms }\n"
                        + "admission:\n  max_queued_requests: 0\n  prefill: { max_inflight_requests: 1 }\n");
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
        collector.close();
    }

    private CompletableFuture<HttpResponse<String>> send(String body, String traceId) {
        return Traces.sendInTrace(bed, body, traceId);
    }

    @Test
    @Order(1)
    void overHttpProtobufAStreamedRequestIsOneTrace() throws Exception {
        String traceId = newTraceId();
        assertThat(send(CHAT, traceId).get().statusCode()).isEqualTo(200);
        List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
        var server = server(trace);
        assertThat(server.hasEvent("first_token")).isTrue();
        for (String name : List.of("admission", "prefill", "decode", "kv_handoff")) {
            assertThat(named(trace, name)).as("%s in %s", name, trace).hasSize(1);
        }
        assertThat(calls(bed.prefill(), traceId).get(0).parentSpanId()).hasValue(named(trace, "prefill").get(0).spanId());
        assertThat(calls(bed.decode(), traceId).get(0).parentSpanId()).hasValue(named(trace, "decode").get(0).spanId());
        assertThat(collector.problems()).isEmpty();
    }

    @Test
    @Order(2)
    void aRejectedRequestIsATraceWithItsReasonAndRetryAfter() throws Exception {
        bed.prefill().faults().setSlowFactor(200); // the one prefill slot stays taken for seconds
        String longPrompt = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":2,\"messages\":[{\"role\":\"user\","
                + "\"content\":\"" + "word ".repeat(500) + "\"}]}";
        CompletableFuture<HttpResponse<String>> holding = send(longPrompt, newTraceId());
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.admission().snapshot().dispatched() == 1)).isTrue();
        String traceId = newTraceId();
        HttpResponse<String> refused = send(CHAT, traceId).get();
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
        String retryAfter = refused.headers().firstValue("Retry-After").orElseThrow();
        bed.prefill().faults().reset();
        assertThat(holding.get().statusCode()).isEqualTo(200);

        List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
        var server = server(trace);
        assertThat(server.attr("http.response.status_code")).hasValue("429");
        assertThat(server.attr("sluice.admission.reason")).hasValue("queue_full");
        assertThat(server.attr("http.response.header.retry-after")).hasValue("[" + retryAfter + "]");
        var admission = named(trace, "admission");
        assertThat(admission).hasSize(1);
        assertThat(admission.get(0).attr("sluice.admission.decision")).hasValue("rejected");
        assertThat(admission.get(0).attr("sluice.admission.reason")).hasValue("queue_full");
        assertThat(admission.get(0).attr("sluice.admission.retry_after_s")).hasValue(retryAfter);
        assertThat(named(trace, "prefill")).as("no worker was called").isEmpty();
    }

    @Test
    @Order(3)
    void aCollectorThatIsGoneCostsRequestsNothingAndTheLostSpansAreCounted() throws Exception {
        collector.stop();
        double before = bed.metric("sluice_tracing_spans_dropped_total{reason=\"export_failed\"}");
        List<Long> millis = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            long t0 = System.nanoTime();
            HttpResponse<String> res = send(CHAT, newTraceId()).get();
            millis.add((System.nanoTime() - t0) / 1_000_000);
            assertThat(res.statusCode()).isEqualTo(200);
            assertThat(res.body()).contains("[DONE]");
        }
        // each request is answered in far less than the export timeout would add if export were on its path
        assertThat(millis).allSatisfy(ms -> assertThat(ms).isLessThan(2_000));
        assertThat(eventually(Duration.ofSeconds(10), () -> metric("export_failed") > before))
                .as("lost spans counted").isTrue();
        // 20 requests' spans fit the export queue many times over: what was lost was lost to the outage
        assertThat(metric("queue_full")).as("nothing lost to a full queue").isZero();
    }

    private static double metric(String reason) {
        try {
            return bed.metric("sluice_tracing_spans_dropped_total{reason=\"" + reason + "\"}");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
