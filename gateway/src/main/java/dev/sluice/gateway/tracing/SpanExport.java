package dev.sluice.gateway.tracing;

import java.time.Duration;

/**
 * Where ended spans wait for the collector: bounded, never blocking the thread that ends a span
 * (what does not fit is dropped and counted), sent in batches by one background thread.
 * {@link EncodedSpanExport} for OTLP/HTTP (each span encoded where it ended), {@link
 * SpanExportQueue} for OTLP/gRPC (the SDK's exporter reads the spans themselves).
 */
interface SpanExport {
    /** An ended, sampled span, from any thread. */
    void add(RecordedSpan span);

    /** Spans dropped so far because the export could not hold them. */
    long dropped();

    /** Sends what is held (waiting up to {@code wait}) and stops. */
    void close(Duration wait);
}
