package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static dev.sluice.gateway.tracing.Traces.awaitTrace;
import static dev.sluice.gateway.tracing.Traces.calls;
import static dev.sluice.gateway.tracing.Traces.named;
import static dev.sluice.gateway.tracing.Traces.newTraceId;
import static dev.sluice.gateway.tracing.Traces.server;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.server.ConfigReload;
import dev.sluice.gateway.server.ReloadResult;
import dev.sluice.gateway.testing.OtlpReceiver;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tracing:} changed by a reload, in a running gateway: added (requests from then on are
 * traced and their workers get the gateway's traceparent), its ratio changed, removed (requests from
 * then on are not; a stream that started traced still exports its whole trace), and a reload refused
 * for another section leaves tracing as it was. The exported count never goes back across the changes.
 */
class TracingReloadEndToEndTest {
    private static final String CHAT = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":4,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private OtlpReceiver collector;
    private PdTestbed bed;

    @AfterEach
    void stop() throws Exception {
        if (bed != null) {
            bed.assertQuiescent();
            bed.close();
        }
        if (collector != null) {
            collector.close();
        }
    }

    private CompletableFuture<HttpResponse<String>> send(String body, String traceId) {
        return Traces.sendInTrace(bed, body, traceId);
    }

    private String tracing(double ratio) {
        return "tracing:\n  otlp: { endpoint: \"" + collector.endpoint() + "\", protocol: http/protobuf }\n"
                + "  sample_ratio: " + ratio + "\n";
    }

    private static ReloadResult reload(ConfigReload reload, Path file, String yaml) throws Exception {
        Files.writeString(file, yaml);
        return reload.reload("test");
    }

    private static String traceparentAt(PdTestbed bed, String traceId) {
        List<RecordedRequest> got = calls(bed.decode(), traceId);
        assertThat(got).as("the decode's requests of trace %s", traceId).hasSize(1);
        return got.get(0).traceparent().orElseThrow();
    }

    @Test
    void tracingTurnedOnChangedAndOffByReloadAppliesToTheRequestsAfterIt(@TempDir Path dir) throws Exception {
        collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5)),
                "{connect: 2s, first_token: 20s, idle_stream: 10s}", "");
        Path file = dir.resolve("gateway.yaml");
        Files.writeString(file, bed.yaml);
        ConfigReload reload = bed.gateway.reloader(file);

        // off: the client's trace is not continued to the workers, nothing is exported
        String before = newTraceId();
        assertThat(send(CHAT, before).get().statusCode()).isEqualTo(200);
        assertThat(calls(bed.decode(), before)).isEmpty();
        assertThat(bed.metrics()).doesNotContain("sluice_tracing_spans_exported_total");

        // on, at 100 %
        ReloadResult on = reload(reload, file, bed.yaml + tracing(1.0));
        assertThat(on.result()).isEqualTo("applied");
        assertThat(on.applied()).contains("tracing");
        assertThat(on.restartRequired()).doesNotContain("tracing");
        String traced = newTraceId();
        assertThat(send(CHAT, traced).get().statusCode()).isEqualTo(200);
        List<OtlpReceiver.Received> trace = awaitTrace(collector, traced);
        for (String name : List.of("admission", "prefill", "decode", "kv_handoff")) {
            assertThat(named(trace, name)).as("%s in %s", name, trace).hasSize(1);
        }
        assertThat(traceparentAt(bed, traced)).endsWith(named(trace, "decode").get(0).spanId() + "-01");
        assertThat(eventually(Duration.ofSeconds(5), () -> exported(bed) >= trace.size())).isTrue();

        // a long stream starts traced; then tracing goes off by reload while it streams
        String streaming = newTraceId();
        String longChat = CHAT.replace("\"max_tokens\":4", "\"max_tokens\":300");
        CompletableFuture<HttpResponse<String>> longOne = send(longChat, streaming);
        assertThat(eventually(Duration.ofSeconds(10), () -> calls(bed.decode(), streaming).size() == 1)).isTrue();
        double exportedBefore = exported(bed);
        ReloadResult off = reload(reload, file, bed.yaml);
        assertThat(off.applied()).contains("tracing");
        String after = newTraceId();
        assertThat(send(CHAT, after).get().statusCode()).isEqualTo(200);
        assertThat(calls(bed.decode(), after)).as("no traceparent once tracing is off").isEmpty();
        assertThat(longOne.get().body()).contains("[DONE]");
        // the stream that started traced ends under the engine it started with: its whole trace is exported
        List<OtlpReceiver.Received> streamed = awaitTrace(collector, streaming);
        assertThat(server(streamed).hasEvent("first_token")).isTrue();
        assertThat(named(streamed, "decode")).hasSize(1);
        assertThat(eventually(Duration.ofSeconds(5), () -> exported(bed) >= exportedBefore + streamed.size())).isTrue();
        assertThat(collector.trace(after)).isEmpty();
        assertThat(collector.trace(before)).isEmpty();

        // on again at 0 %: the workers get the client's trace with flag 00, nothing is recorded
        ReloadResult zero = reload(reload, file, bed.yaml + tracing(0.0));
        assertThat(zero.applied()).contains("tracing");
        String unsampled = newTraceId();
        assertThat(send(CHAT, unsampled).get().statusCode()).isEqualTo(200);
        assertThat(traceparentAt(bed, unsampled)).startsWith("00-" + unsampled + "-").endsWith("-00");

        // a reload refused for another reason leaves tracing as it was (at 0 %), and the count never went back
        double exportedNow = exported(bed);
        ReloadResult refused = reload(reload, file, pooled(bed.yaml) + tracing(1.0));
        assertThat(refused.result()).isEqualTo("invalid");
        assertThat(refused.error()).contains("pools: added");
        String stillZero = newTraceId();
        assertThat(send(CHAT, stillZero).get().statusCode()).isEqualTo(200);
        assertThat(traceparentAt(bed, stillZero)).endsWith("-00");
        assertThat(exported(bed)).isGreaterThanOrEqualTo(exportedNow);
        assertThat(collector.trace(unsampled)).isEmpty();
        assertThat(collector.trace(stillZero)).isEmpty();
        assertThat(collector.problems()).isEmpty();
    }

    // the same workers as a pool: a file a gateway started without pools refuses as a whole, in the reload's apply
    private static String pooled(String yaml) {
        int workers = yaml.indexOf("workers:\n");
        int after = yaml.indexOf("timeouts:");
        return yaml.substring(0, workers).replace("disaggregation: sglang\n", "") + yaml.substring(after)
                + "pools:\n  - name: main\n    models: [sim-model]\n    disaggregation: sglang\n"
                + yaml.substring(workers, after).indent(4);
    }

    private static double exported(PdTestbed bed) {
        try {
            return bed.metric("sluice_tracing_spans_exported_total");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
