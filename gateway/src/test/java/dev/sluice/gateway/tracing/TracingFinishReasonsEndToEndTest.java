package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.tracing.Traces.awaitTrace;
import static dev.sluice.gateway.tracing.Traces.newSpanId;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static dev.sluice.gateway.tracing.Traces.server;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The server span carries {@code gen_ai.response.finish_reasons} as the worker named them: a
 * stream's last chunk, a whole answer's choices, SGLang /generate's {@code meta_info.finish_reason.type}.
 */
class TracingFinishReasonsEndToEndTest {
    private static OtlpReceiver collector;
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(1)),
                "{connect: 2s, first_token: 20s, idle_stream: 10s}",
                "tracing:\n  otlp: { endpoint: \"" + collector.endpoint() + "\", protocol: http/protobuf, timeout: 5s }\n");
    }

    @AfterAll
    static void stop() throws Exception {
        if (bed != null) {
            bed.close();
        }
        collector.close();
    }

    private String reasons(String path, String body) throws Exception {
        String traceId = newTraceId();
        HttpResponse<String> res = bed.http.send(HttpRequest.newBuilder(bed.uri(path)).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json")
                .header("traceparent", "00-" + traceId + "-" + newSpanId() + "-01")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        assertThat(res.body()).contains("length");
        return server(awaitTrace(collector, traceId)).attr("gen_ai.response.finish_reasons").orElse("(none)");
    }

    @Test
    void aStreamedChatAnswersFinishReasonIsOnTheServerSpan() throws Exception {
        assertThat(reasons("/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":3,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}")).isEqualTo("[length]");
    }

    @Test
    void aWholeChatAnswersFinishReasonIsOnTheServerSpan() throws Exception {
        assertThat(reasons("/v1/chat/completions", "{\"model\":\"sim-model\",\"max_tokens\":3,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}")).isEqualTo("[length]");
    }

    @Test
    void generatesMetaInfoFinishReasonTypeIsOnTheServerSpan() throws Exception {
        assertThat(reasons("/generate", "{\"text\":\"hello there\",\"stream\":true,"
                + "\"sampling_params\":{\"max_new_tokens\":3}}")).isEqualTo("[length]");
        assertThat(reasons("/generate", "{\"text\":[\"hello there\",\"and you\"],"
                + "\"sampling_params\":{\"max_new_tokens\":3}}")).isEqualTo("[length, length]");
    }
}
