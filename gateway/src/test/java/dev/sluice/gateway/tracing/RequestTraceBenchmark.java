package dev.sluice.gateway.tracing;

import com.sun.net.httpserver.HttpServer;
import dev.sluice.gateway.config.TracingConfig;
import dev.sluice.gateway.tracing.otlp.TraceRequestEncoder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.data.DelegatingSpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.opentelemetry.exporter.internal.otlp.traces.LowAllocationTraceRequestMarshaler;
import io.opentelemetry.exporter.internal.otlp.traces.TraceRequestMarshaler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What tracing costs per request, in its two halves. {@code sglangRequest}: the span calls one
 * SGLang PD request makes on its event loop (server span, admission, prefill, KV handoff, decode,
 * the first-token event, the worker traceparents) into the gateway's real SDK set-up
 * ({@link Tracing#start}: sampler, recorded spans, export queue, OTLP/HTTP exporter to a loopback receiver);
 * the export runs meanwhile on its own thread, as in the gateway. {@code encodeSpan} and
 * {@code marshalSpan*}: the export thread's CPU, per span: one batch of {@value #BATCH} such spans
 * encoded by the gateway's own OTLP/HTTP encoder ({@link TraceRequestEncoder}), and, for comparison,
 * as the SDK's OTLP exporter does (its reusable-data marshaler, its default, and the immutable one,
 * which the gRPC exporter uses), into a null stream: the network is left out because a loopback
 * post's time is mostly waiting, not CPU.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class RequestTraceBenchmark {
    static final int BATCH = 512;
    private static final byte[] CHUNK = new byte[64 * 1024];
    private HttpServer receiver;
    private Tracing tracing;
    private final LowAllocationTraceRequestMarshaler reusable = new LowAllocationTraceRequestMarshaler();
    private final TraceRequestEncoder encoder = new TraceRequestEncoder();
    private final List<SpanData> batch = new ArrayList<>();
    // the same spans as the SDK's own span data would hold them (each field made once), for its marshalers
    private final List<SpanData> snapshots = new ArrayList<>();
    private final Object attemptKey = new Object();
    private long requests; // each request its own rid and bootstrap room, as the gateway's are

    @Setup
    public void setUp() throws Exception {
        receiver = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        receiver.createContext("/v1/traces", ex -> {
            try (InputStream in = ex.getRequestBody()) {
                while (in.read(CHUNK) >= 0) {
                    // a collector reads the whole batch
                }
            }
            ex.getResponseHeaders().set("Content-Type", "application/x-protobuf");
            ex.sendResponseHeaders(200, -1);
            ex.close();
        });
        receiver.start();
        TracingConfig config = new TracingConfig("http://127.0.0.1:" + receiver.getAddress().getPort() + "/v1/traces",
                TracingConfig.Protocol.HTTP_PROTOBUF, Map.of(), Duration.ofSeconds(5), 1.0, "bench", false);
        tracing = Tracing.start(config, new SimpleMeterRegistry());
        // one batch of real spans of the same shape, collected as ended
        SpanRecorder collect = new SpanRecorder(Resource.getDefault(), batch::add);
        while (batch.size() < BATCH) {
            oneRequest(RequestTrace.start(collect, Sampler.alwaysOn(), Context.root(), facts(), System.nanoTime()));
        }
        batch.subList(BATCH, batch.size()).clear();
        for (SpanData s : batch) {
            snapshots.add(new Snapshot(s));
        }
    }

    @TearDown
    public void tearDown() {
        tracing.close();
        receiver.stop(0);
    }

    // the next request's facts: its own request id
    private RequestTrace.Facts facts() {
        return new RequestTrace.Facts("chat", "llama-3-8b", 64, "/v1/chat/completions", requestId(requests + 1), false);
    }

    private static String requestId(long n) {
        return Long.toHexString(0xa1b2c3d4e5f6a7b8L + n);
    }

    private int oneRequest(RequestTrace t) {
        int[] headers = new int[1];
        long n = ++requests;
        String rid = requestId(n) + "-1";
        t.admissionStarted("standard", "default", 42);
        t.admitted("http://127.0.0.1:30001", "http://127.0.0.1:30002", 0);
        t.workerCall(attemptKey, RequestTrace.Call.PREFILL, "127.0.0.1:30001", "127.0.0.1", 30001, rid,
                (k, v) -> headers[0] += v.length());
        t.callAttribute(attemptKey, RequestTrace.Call.PREFILL, "sluice.sglang.bootstrap_room", 1234567890L + n);
        t.workerCall(attemptKey, RequestTrace.Call.DECODE, "127.0.0.1:30002", "127.0.0.1", 30002, rid,
                (k, v) -> headers[0] += v.length());
        t.prefillDone(attemptKey);
        t.firstToken(attemptKey, 300_000);
        t.responseEnded(attemptKey, true);
        t.finishReasons(List.of("stop"));
        t.inputTokens(42);
        t.end(200, "ok", 16, "");
        return headers[0];
    }

    @Benchmark
    public int sglangRequest() {
        return oneRequest(tracing.request(null, facts(), System.nanoTime()));
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int marshalSpanReusable() throws IOException {
        reusable.initialize(snapshots);
        try {
            int size = reusable.getBinarySerializedSize();
            reusable.writeBinaryTo(OutputStream.nullOutputStream());
            return size;
        } finally {
            reusable.reset();
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int encodeSpan() {
        encoder.encode(batch);
        return encoder.size();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int marshalSpanImmutable() throws IOException {
        TraceRequestMarshaler m = TraceRequestMarshaler.create(snapshots);
        m.writeBinaryTo(OutputStream.nullOutputStream());
        return m.getBinarySerializedSize();
    }

    /** A span's data with every field made once, as the SDK's immutable span data holds it. */
    private static final class Snapshot extends DelegatingSpanData {
        private final SpanContext context;
        private final SpanContext parent;
        private final Attributes attributes;
        private final StatusData status;

        Snapshot(SpanData s) {
            super(s);
            context = s.getSpanContext();
            parent = s.getParentSpanContext();
            attributes = s.getAttributes();
            status = s.getStatus();
        }

        @Override
        public SpanContext getSpanContext() {
            return context;
        }

        @Override
        public SpanContext getParentSpanContext() {
            return parent;
        }

        @Override
        public Attributes getAttributes() {
            return attributes;
        }

        @Override
        public StatusData getStatus() {
            return status;
        }
    }
}
