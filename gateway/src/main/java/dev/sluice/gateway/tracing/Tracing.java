package dev.sluice.gateway.tracing;

import dev.sluice.gateway.config.TracingConfig;
import dev.sluice.gateway.tracing.otlp.OtlpHttpSender;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.handler.codec.http.HttpHeaders;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.export.MemoryMode;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporter;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporterBuilder;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's OpenTelemetry tracing: its sampler (the SDK's), its spans ({@link RecordedSpan},
 * written by the event loops without the SDK's span machinery), its OTLP exporter behind a bounded
 * batch queue, and the metrics of what it lost. Off ({@link #off()}) unless {@code tracing:} is
 * configured; then every request gets a {@link RequestTrace}. Export never blocks a request: a
 * span ends into a bounded {@link SpanExport} (for OTLP/HTTP encoded at once, where it ended) that
 * one background thread sends in batches; what does not fit is dropped and counted.
 */
public final class Tracing implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Tracing.class);
    /** Spans waiting for export at most; past it new spans are dropped (counted), memory stays flat. */
    static final int MAX_QUEUE = 2048;
    static final int MAX_BATCH = 512;
    /** The longest a span waits for its post. */
    private static final Duration DELAY = Duration.ofMillis(500);
    /** OTLP/HTTP: chunks of encoded spans waiting at most (EncodedSpanExport.CHUNK_BYTES, ~100 spans each), and a post's. */
    static final int MAX_CHUNKS = 32;
    static final int BATCH_CHUNKS = 8;
    private static final String DROPPED = "Spans the gateway did not deliver to the collector: queue_full (the export "
            + "queue was full: 1 MiB of encoded spans for OTLP/HTTP, " + MAX_QUEUE + " spans for gRPC), export_failed (the collector could not be reached in time "
            + "or refused the batch)";
    private static final Tracing OFF = new Tracing(null, null, null, null);
    // the exporter logs every failed batch through java.util.logging; WatchedExporter logs the outage once
    private static final java.util.logging.Logger EXPORTER_JUL = java.util.logging.Logger.getLogger("io.opentelemetry.exporter");

    static final TextMapGetter<HttpHeaders> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(HttpHeaders carrier) {
            return carrier.names();
        }

        @Override
        public String get(HttpHeaders carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private final SpanExport queue;
    private final SpanRecorder recorder;
    private final Sampler sampler;
    private final TracingConfig config;

    private Tracing(SpanExport queue, SpanRecorder recorder, Sampler sampler, TracingConfig config) {
        this.queue = queue;
        this.recorder = recorder;
        this.sampler = sampler;
        this.config = config;
    }

    /** Tracing off: every request gets {@link RequestTrace#NONE}, nothing is built or sent. */
    public static Tracing off() {
        return OFF;
    }

    /** Starts tracing for {@code config}: its export thread, and its counters registered in {@code registry}. */
    public static Tracing start(TracingConfig config, MeterRegistry registry) {
        EXPORTER_JUL.setLevel(Level.OFF);
        Resource resource = Resource.getDefault().merge(Resource.create(Attributes.of(
                AttributeKey.stringKey("service.name"), config.serviceName())));
        WatchedExporter exporter;
        SpanExport queue;
        if (config.protocol() == TracingConfig.Protocol.GRPC) {
            exporter = new WatchedExporter(grpcExporter(config), config.exportUrl());
            queue = new SpanExportQueue(exporter, MAX_QUEUE, MAX_BATCH, DELAY, config.timeout());
        } else {
            OtlpHttpSender sender = httpSender(config);
            exporter = new WatchedExporter(sender, config.exportUrl());
            WatchedExporter watched = exporter;
            queue = new EncodedSpanExport(resource, new EncodedSpanExport.Post() {
                @Override
                public CompletableResultCode post(byte[] body, int length, int spans, Runnable abandoned) {
                    return watched.watch(spans, () -> sender.post(body, length, abandoned));
                }

                @Override
                public CompletableResultCode shutdown() {
                    return sender.shutdown();
                }
            }, MAX_CHUNKS, BATCH_CHUNKS, DELAY, config.timeout());
        }
        SpanRecorder recorder = new SpanRecorder(resource, queue::add);
        // without honor_client_sampling the client's trace id is continued but its sampled flag is not
        // obeyed: the ratio decides on the trace id, so a client cannot make every one of its requests recorded
        Sampler sampler = new RatioSampler(config.sampleRatio(), config.honorClientSampling());
        FunctionCounter.builder("sluice.tracing.spans.dropped", queue, SpanExport::dropped)
                .description(DROPPED)
                .tag("reason", "queue_full").register(registry);
        FunctionCounter.builder("sluice.tracing.spans.dropped", exporter, WatchedExporter::failed)
                .description(DROPPED)
                .tag("reason", "export_failed").register(registry);
        FunctionCounter.builder("sluice.tracing.spans.exported", exporter, WatchedExporter::exported)
                .description("Spans the collector accepted").register(registry);
        log.info("tracing on endpoint={} protocol={} sample_ratio={} honor_client_sampling={} service_name={}",
                config.exportUrl(), config.protocol().label(), config.sampleRatio(), config.honorClientSampling(),
                config.serviceName());
        return new Tracing(queue, recorder, sampler, config);
    }

    // http/protobuf: our own encoder, each span encoded where it ends (EncodedSpanExport), posted with the
    // JDK (OtlpHttpSender): the SDK's exporter built marshaler objects for every span, attribute and event
    // and then a second pass for their sizes, on the one core the export shares with the event loop
    // (docs/benchmarks.md, "Tracing"). gRPC keeps the SDK's exporter, with IMMUTABLE_DATA: its reusable
    // marshaler allocates less but took more CPU a span
    private static SpanExporter grpcExporter(TracingConfig c) {
        OtlpGrpcSpanExporterBuilder b = OtlpGrpcSpanExporter.builder().setEndpoint(c.exportUrl())
                .setMemoryMode(MemoryMode.IMMUTABLE_DATA)
                .setTimeout(c.timeout()).setRetryPolicy(null); // a lost batch is counted; the next one tries again
        c.headers().forEach((k, v) -> b.addHeader(k, v.reveal()));
        return b.build();
    }

    private static OtlpHttpSender httpSender(TracingConfig c) {
        Map<String, String> headers = new LinkedHashMap<>();
        c.headers().forEach((k, v) -> headers.put(k, v.reveal()));
        return new OtlpHttpSender(c.exportUrl(), headers, c.timeout());
    }

    public boolean on() {
        return recorder != null;
    }

    /**
     * The trace of one request that arrived at {@code receivedNanos} with {@code clientHeaders}: a
     * client's {@code traceparent}/{@code tracestate} continued, else a new trace. {@link RequestTrace#NONE}
     * when tracing is off.
     */
    public RequestTrace request(HttpHeaders clientHeaders, RequestTrace.Facts facts, long receivedNanos) {
        if (recorder == null) {
            return RequestTrace.NONE;
        }
        Context parent = clientHeaders == null ? Context.root()
                : W3CTraceContextPropagator.getInstance().extract(Context.root(), clientHeaders, HEADERS);
        return RequestTrace.start(recorder, sampler, parent, facts, receivedNanos);
    }

    /**
     * A request refused before admission (bad HTTP, bad JSON or field, unknown key, route or model,
     * body too large, a timeout while reading it, the connection cap): one server span, started and
     * ended now, with the HTTP status and the error code ({@code error.type}), continuing the
     * client's {@code traceparent} when its headers were read ({@code clientHeaders} null: none,
     * {@code method} null: no request line either). Nothing at all when tracing is off.
     */
    public void refused(HttpHeaders clientHeaders, String method, String path, int status, String code, String message) {
        if (recorder == null) {
            return;
        }
        Context parent = clientHeaders == null ? Context.root()
                : W3CTraceContextPropagator.getInstance().extract(Context.root(), clientHeaders, HEADERS);
        RefusalSpan.record(recorder, sampler, parent, method, path, status, code, message);
    }

    /** Exports what is queued (up to 5 s) and stops. */
    @Override
    public void close() {
        if (queue != null) {
            queue.close(Duration.ofSeconds(5));
        }
    }

    @Override
    public String toString() {
        return config == null ? "tracing off" : "tracing to " + config.exportUrl();
    }
}
