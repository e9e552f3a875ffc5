package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static dev.sluice.gateway.tracing.Traces.awaitTrace;
import static dev.sluice.gateway.tracing.Traces.calls;
import static dev.sluice.gateway.tracing.Traces.named;
import static dev.sluice.gateway.tracing.Traces.newSpanId;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static dev.sluice.gateway.tracing.Traces.server;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Traces of real requests through the gateway and two simulated SGLang prefills and a decode,
 * exported over OTLP/gRPC to a receiver that decodes the wire format: one trace per request with
 * the client's trace id, admission, each call to a worker and the KV handoff as spans, and the
 * workers handed a traceparent that names the gateway's span of their call.
 */
class TracingEndToEndTest {
    private static final String TIMEOUTS = "{connect: 2s, first_token: 10s, idle_stream: 5s, request: 60s}";
    private static final String CHAT = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":8,"
            + "\"stream_options\":{\"include_usage\":true},"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private static final String PLAIN = "{\"model\":\"sim-model\",\"max_tokens\":4,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello again\"}]}";
    private static OtlpReceiver collector;
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        collector = OtlpReceiver.start(OtlpReceiver.Transport.GRPC);
        bed = PdTestbed.start(2, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withKvWait(Duration.ofSeconds(30)), TIMEOUTS, "tracing:\n  otlp: { endpoint: \"" + collector.endpoint()
                + "\", protocol: grpc, timeout: 2s }\n  sample_ratio: 1.0\n  service_name: sluice-under-test\n");
    }

    @AfterEach
    void heal() throws Exception {
        bed.cluster.prefills().forEach(p -> p.faults().reset());
        bed.decode().faults().reset();
        bed.assertQuiescent();
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
        collector.close();
    }

    private HttpResponse<String> post(String body, String traceparent) throws Exception {
        return bed.http.send(HttpRequest.newBuilder(bed.uri("/v1/chat/completions")).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").header("traceparent", traceparent)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aStreamedPdRequestIsOneTraceWithTheClientsIdAndBothWorkersJoinIt() throws Exception {
        String traceId = newTraceId();
        String clientSpan = newSpanId();
        HttpResponse<String> res = post(CHAT, "00-" + traceId + "-" + clientSpan + "-01");
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        assertThat(res.body()).contains("[DONE]");

        List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
        var server = server(trace);
        assertThat(server.parentId()).as("the client's span is the parent").isEqualTo(clientSpan);
        assertThat(server.service()).isEqualTo("sluice-under-test");
        assertThat(server.name()).isEqualTo("chat sim-model");
        assertThat(server.attr("gen_ai.operation.name")).hasValue("chat");
        assertThat(server.attr("gen_ai.request.model")).hasValue("sim-model");
        assertThat(server.attr("gen_ai.request.max_tokens")).hasValue("8");
        assertThat(server.attr("http.response.status_code")).hasValue("200");
        assertThat(server.attr("gen_ai.usage.output_tokens").map(Long::parseLong)).hasValueSatisfying(
                n -> assertThat(n).isPositive());
        assertThat(server.attr("gen_ai.usage.input_tokens")).isPresent();
        assertThat(server.hasEvent("first_token")).as("%s", server).isTrue();

        var admission = named(trace, "admission");
        var prefill = named(trace, "prefill");
        var decode = named(trace, "decode");
        var handoff = named(trace, "kv_handoff");
        assertThat(admission).hasSize(1);
        assertThat(admission.get(0).attr("sluice.admission.decision")).hasValue("granted");
        assertThat(admission.get(0).attr("sluice.admission.queued")).as("room at once: not queued").hasValue("false");
        assertThat(prefill).hasSize(1);
        assertThat(decode).hasSize(1);
        assertThat(handoff).hasSize(1);
        for (var child : List.of(admission.get(0), prefill.get(0), decode.get(0), handoff.get(0))) {
            assertThat(child.parentId()).as("%s under the server span", child).isEqualTo(server.spanId());
        }

        // both workers got the same trace, each with the gateway's span of its own call as the parent
        PrefillServer p = bed.cluster.prefills().stream().filter(w -> !calls(w, traceId).isEmpty()).findFirst()
                .orElseThrow(() -> new AssertionError("no prefill received trace " + traceId));
        RecordedRequest toPrefill = calls(p, traceId).get(0);
        RecordedRequest toDecode = calls(bed.decode(), traceId).get(0);
        assertThat(toPrefill.parentSpanId()).hasValue(prefill.get(0).spanId());
        assertThat(toDecode.parentSpanId()).hasValue(decode.get(0).spanId());
        assertThat(toPrefill.traceparent().orElseThrow()).endsWith("-01");
        assertThat(prefill.get(0).attr("sluice.worker")).hasValue(p.url().replaceFirst("^http://", ""));
        // the semantic conventions' server.address is the host alone, its port in server.port
        java.net.URI prefillUri = java.net.URI.create(p.url());
        assertThat(prefill.get(0).attr("server.address")).hasValue(prefillUri.getHost());
        assertThat(prefill.get(0).attr("server.port")).hasValue(String.valueOf(prefillUri.getPort()));
        assertThat(prefill.get(0).attr("sluice.sglang.bootstrap_room"))
                .hasValue(toPrefill.body().path("bootstrap_room").asText());
        assertThat(decode.get(0).attr("sluice.worker_rid")).hasValue(toDecode.body().path("rid").asText());
        assertThat(collector.problems()).isEmpty();
    }

    @Test
    void aRetriedRequestShowsBothAttemptsAsSiblings() throws Exception {
        PrefillServer busy = bed.cluster.prefills().get(0);
        busy.faults().setFailStatus(503);
        String retried = null;
        for (int i = 0; i < 10 && retried == null; i++) {
            String traceId = newTraceId();
            HttpResponse<String> res = post(PLAIN, "00-" + traceId + "-" + newSpanId() + "-01");
            assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
            if (!calls(busy, traceId).isEmpty()) {
                retried = traceId;
            }
        }
        assertThat(retried).as("a request met the busy prefill").isNotNull();
        List<OtlpReceiver.Received> trace = awaitTrace(collector, retried);
        var server = server(trace);
        var prefills = named(trace, "prefill");
        assertThat(prefills).as("%s", trace).hasSize(2);
        assertThat(prefills).allSatisfy(s -> assertThat(s.parentId()).isEqualTo(server.spanId()));
        assertThat(prefills).extracting(s -> s.attr("sluice.attempt").orElse("-")).containsExactlyInAnyOrder("1", "2");
        var first = prefills.stream().filter(s -> s.attr("sluice.attempt").orElse("").equals("1")).findFirst().orElseThrow();
        assertThat(first.span().getStatus().getCode().name()).isEqualTo("STATUS_CODE_ERROR");
        assertThat(first.attr("sluice.worker")).hasValue(busy.url().replaceFirst("^http://", ""));
        assertThat(server.hasEvent("retry")).isTrue();
        assertThat(server.eventAttr("retry", "sluice.retry.reason")).hasValue("worker_busy");
        assertThat(server.attr("sluice.attempts")).hasValue("2");
        assertThat(named(trace, "admission")).as("a wait for a pair per attempt").hasSize(2);
        // each attempt's worker saw its own call's span as the parent
        String busyParent = calls(busy, retried).get(0).parentSpanId().orElseThrow();
        assertThat(busyParent).isEqualTo(first.spanId());
    }

    @Test
    void aClientThatLeavesBeforeTheFirstTokenShowsTheAbortsOfBothHalves() throws Exception {
        bed.cluster.prefills().forEach(p -> p.faults().setSlowFactor(200)); // the prefill works for seconds
        String traceId = newTraceId();
        String body = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":8,\"messages\":[{\"role\":\"user\","
                + "\"content\":\"" + "word ".repeat(2000) + "\"}]}";
        try (RawHttpClient client = new RawHttpClient(bed.port())) {
            client.post("/v1/chat/completions", body, "traceparent", "00-" + traceId + "-" + newSpanId() + "-01");
            assertThat(eventually(Duration.ofSeconds(5), () -> !calls(bed.decode(), traceId).isEmpty()
                    && bed.cluster.prefills().stream().anyMatch(p -> !calls(p, traceId).isEmpty()))).isTrue();
        }
        List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
        var server = server(trace);
        assertThat(server.hasEvent("client_disconnect")).as("%s", server).isTrue();
        for (String half : List.of("prefill", "decode")) {
            var spans = named(trace, half);
            assertThat(spans).as("%s in %s", half, trace).hasSize(1);
            assertThat(spans.get(0).hasEvent("abort")).as("%s", spans.get(0)).isTrue();
            assertThat(spans.get(0).eventAttr("abort", "sluice.abort.cause")).hasValue("client_disconnect");
        }
    }

    @Test
    void aClientsExternalTraceHeaderInAGenerateBodyNeverReachesTheWorkers() throws Exception {
        // SGLang takes GenerateReqInput.external_trace_header before the request's traceparent header:
        // a client's copy would hang the workers' spans under a parent of its choosing
        String traceId = newTraceId();
        String foreign = "00-" + newTraceId() + "-" + newSpanId() + "-01";
        String body = "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":4},"
                + "\"external_trace_header\":{\"traceparent\":\"" + foreign + "\"}}";
        HttpResponse<String> res = bed.http.send(HttpRequest.newBuilder(bed.uri("/generate"))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .header("traceparent", "00-" + traceId + "-" + newSpanId() + "-01")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);

        List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
        RecordedRequest toDecode = calls(bed.decode(), traceId).get(0);
        assertThat(toDecode.body().has("external_trace_header")).as("%s", toDecode.body()).isFalse();
        assertThat(toDecode.parentSpanId()).hasValue(named(trace, "decode").get(0).spanId());
        PrefillServer p = bed.cluster.prefills().stream().filter(w -> !calls(w, traceId).isEmpty()).findFirst()
                .orElseThrow(() -> new AssertionError("no prefill received trace " + traceId));
        assertThat(calls(p, traceId).get(0).body().has("external_trace_header")).isFalse();
    }

    @Test
    void withoutHonorClientSamplingAClientsUnsampledFlagDoesNotDecide() throws Exception {
        // sample_ratio 1: the gateway records every request, whatever flag the client sent
        String traceId = newTraceId();
        HttpResponse<String> res = post(PLAIN, "00-" + traceId + "-" + newSpanId() + "-00");
        assertThat(res.statusCode()).isEqualTo(200);
        List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
        assertThat(named(trace, "prefill")).hasSize(1);
        assertThat(calls(bed.decode(), traceId).get(0).traceparent().orElseThrow()).endsWith("-01");
    }
}
