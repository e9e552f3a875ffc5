package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static dev.sluice.gateway.tracing.Traces.awaitTrace;
import static dev.sluice.gateway.tracing.Traces.calls;
import static dev.sluice.gateway.tracing.Traces.newSpanId;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static dev.sluice.gateway.tracing.Traces.server;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A request refused before admission is a trace too: bad JSON, an invalid field, an unknown API key,
 * an unknown route, a body over the limit (each continuing the client's traceparent, with its status
 * and error code, and no worker called), and a connection past the cap (a trace of its own: no byte
 * of it is read).
 */
class TracingRefusalsEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHAT = "{\"model\":\"sim-model\",\"max_tokens\":2,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    private static final int CAP = 6;
    private static OtlpReceiver collector;
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
        bed = PdTestbed.start(1, 1, SimConfig.defaults(), "{connect: 2s, first_token: 20s, idle_stream: 10s}",
                "tracing:\n  otlp: { endpoint: \"" + collector.endpoint() + "\", protocol: http/protobuf, timeout: 5s }\n"
                        + "http: { max_request_body: 2KiB, max_connections: " + CAP + " }\n"
                        + "admission:\n  require_api_key: false\n  api_keys:\n"
                        + "    gold-key: { sha256: 83a9d60338d134e3e8f33851f115498635f1090262307ce959b86e5eee88bb90, "
                        + "tenant: gold, priority: high }\n");
    }

    @AfterAll
    static void stop() throws Exception {
        if (bed != null) {
            bed.close();
        }
        collector.close();
    }

    @Test
    void eachRefusalBeforeAdmissionIsATraceContinuingTheClientsWithItsStatusAndCode() throws Exception {
        refusedAndTraced("/v1/chat/completions", "{\"model\":", null, 400);
        refusedAndTraced("/v1/chat/completions", CHAT.replace("\"max_tokens\":2", "\"max_tokens\":-3"), null, 400);
        refusedAndTraced("/v1/chat/completions", CHAT, "Bearer sk-not-a-key", 401);
        refusedAndTraced("/v1/no-such-route", CHAT, null, 404);
        refusedAndTraced("/v1/chat/completions", CHAT.replace("hello", "word ".repeat(600)), null, 413);
        assertThat(collector.problems()).isEmpty();
    }

    private void refusedAndTraced(String path, String body, String auth, int status) throws Exception {
        String traceId = newTraceId();
        String clientSpan = newSpanId();
        var b = HttpRequest.newBuilder(bed.uri(path)).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .header("traceparent", "00-" + traceId + "-" + clientSpan + "-01")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (auth != null) {
            b.header("Authorization", auth);
        }
        HttpResponse<String> res = bed.http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).as(res.body()).isEqualTo(status);
        String code = JSON.readTree(res.body()).at("/error/code").asText();
        assertThat(code).isNotEmpty();

        List<OtlpReceiver.Received> trace = awaitTrace(collector, traceId);
        var server = server(trace);
        assertThat(trace).as("one span: nothing past the refusal").hasSize(1);
        assertThat(server.parentId()).as("the client's span is the parent").isEqualTo(clientSpan);
        assertThat(server.attr("http.response.status_code")).hasValue(String.valueOf(status));
        assertThat(server.attr("error.type")).hasValue(code);
        assertThat(server.attr("http.request.method")).hasValue("POST");
        assertThat(server.attr("url.path")).hasValue(path);
        assertThat(calls(bed.prefill(), traceId)).isEmpty();
        assertThat(calls(bed.decode(), traceId)).isEmpty();
    }

    @Test
    void aConnectionPastTheCapIsATraceOfItsOwn() throws Exception {
        List<Socket> held = new ArrayList<>();
        try {
            boolean refused = false;
            for (int i = 0; i < CAP + 3 && !refused; i++) {
                Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", bed.port()), 5000);
                s.setSoTimeout(300);
                held.add(s);
                refused = readSome(s.getInputStream()).startsWith("HTTP/1.1 503 ");
            }
            assertThat(refused).as("a connection past %d was refused", CAP).isTrue();
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
        assertThat(eventually(Duration.ofSeconds(10), () -> collector.spans().stream()
                .anyMatch(s -> s.attr("error.type").filter("too_many_connections"::equals).isPresent()))).isTrue();
        var span = collector.spans().stream()
                .filter(s -> s.attr("error.type").filter("too_many_connections"::equals).isPresent()).findFirst().orElseThrow();
        assertThat(span.span().getKind()).isEqualTo(io.opentelemetry.proto.trace.v1.Span.SpanKind.SPAN_KIND_SERVER);
        assertThat(span.attr("http.response.status_code")).hasValue("503");
        assertThat(span.span().getStatus().getCode())
                .isEqualTo(io.opentelemetry.proto.trace.v1.Status.StatusCode.STATUS_CODE_ERROR);
    }

    private static String readSome(InputStream in) throws Exception {
        byte[] buf = new byte[4096];
        try {
            int n = in.read(buf);
            return n <= 0 ? "" : new String(buf, 0, n, StandardCharsets.US_ASCII);
        } catch (SocketTimeoutException e) {
            return "";
        }
    }
}
