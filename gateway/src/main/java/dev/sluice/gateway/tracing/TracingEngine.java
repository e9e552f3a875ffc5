package dev.sluice.gateway.tracing;

import dev.sluice.gateway.config.TracingConfig;
import dev.sluice.gateway.tracing.otlp.OtlpHttpSender;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
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
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What one {@code tracing:} section runs: its sampler, its span recorder, its OTLP exporter behind a
 * bounded export ({@link SpanExport}, one background thread) and the counts of what it delivered and
 * lost. {@link Tracing} holds the one in force; a reload that changes the section starts a new engine
 * and retires the old one, so the requests that started under a setting finish under it.
 */
final class TracingEngine {
    /** Spans waiting for export at most (gRPC); past it new spans are dropped (counted), memory stays flat. */
    static final int MAX_QUEUE = 2048;
    static final int MAX_BATCH = 512;
    /** The longest a span waits for its post. */
    static final Duration DELAY = Duration.ofMillis(500);
    /** OTLP/HTTP: chunks of encoded spans waiting at most (EncodedSpanExport.CHUNK_BYTES, ~100 spans each), and a post's. */
    static final int MAX_CHUNKS = 32;
    static final int BATCH_CHUNKS = 8;

    final TracingConfig config;
    final SpanRecorder recorder;
    final Sampler sampler;
    private final SpanExport export;
    private final WatchedExporter exporter;
    private final AtomicBoolean closed = new AtomicBoolean();

    private TracingEngine(TracingConfig config, SpanExport export, WatchedExporter exporter, SpanRecorder recorder) {
        this.config = config;
        this.export = export;
        this.exporter = exporter;
        this.recorder = recorder;
        // without honor_client_sampling the client's trace id is continued but its sampled flag is not
        // obeyed: the ratio decides on the trace id, so a client cannot make every one of its requests recorded
        this.sampler = new RatioSampler(config.sampleRatio(), config.honorClientSampling());
    }

    /** Builds and starts the export of {@code config} (its thread runs from here on). */
    static TracingEngine start(TracingConfig config) {
        Resource resource = Resource.getDefault().merge(Resource.create(Attributes.of(
                AttributeKey.stringKey("service.name"), config.serviceName())));
        WatchedExporter exporter;
        SpanExport export;
        if (config.protocol() == TracingConfig.Protocol.GRPC) {
            exporter = new WatchedExporter(grpcExporter(config), config.exportUrl());
            export = new SpanExportQueue(exporter, MAX_QUEUE, MAX_BATCH, DELAY, config.timeout());
        } else {
            OtlpHttpSender sender = httpSender(config);
            exporter = new WatchedExporter(sender, config.exportUrl());
            WatchedExporter watched = exporter;
            export = new EncodedSpanExport(resource, new EncodedSpanExport.Post() {
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
        return new TracingEngine(config, export, exporter, new SpanRecorder(resource, export::add));
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

    /** Where its spans wait for the collector (tests). */
    SpanExport export() {
        return export;
    }

    /** Spans dropped because the export queue was full. */
    long queueFull() {
        return export.dropped();
    }

    /** Spans lost because the collector could not be reached in time or refused them. */
    long exportFailed() {
        return exporter.failed();
    }

    /** Spans the collector accepted. */
    long exported() {
        return exporter.exported();
    }

    /** Exports what is held (waiting up to {@code wait}) and stops; spans that end later are dropped and counted. */
    void close(Duration wait) {
        if (closed.compareAndSet(false, true)) { // the gateway's close and a reload's retirement may both come
            export.close(wait);
        }
    }
}
