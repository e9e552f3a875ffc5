package dev.sluice.gateway.tracing;

import io.netty.util.internal.PlatformDependent;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;

/**
 * The bounded queue between the event loops that end spans and the one thread that exports them
 * in batches: a span is offered to a lock-free multi-producer queue of {@code capacity} spans (a
 * full queue drops it and counts it, the request never waits), and the export thread wakes when a
 * batch is full or the delay has passed. What the SDK's BatchSpanProcessor does, without turning
 * each span into an immutable copy first: a {@link RecordedSpan} is no longer written once ended,
 * so the encoder reads it as it is.
 */
final class SpanExportQueue extends ExportThread implements AutoCloseable {
    private final Queue<RecordedSpan> queue;
    private final int batchSize;
    private final long delayNanos;
    private final SpanExporter exporter;

    SpanExportQueue(SpanExporter exporter, int capacity, int batchSize, Duration delay, Duration exportTimeout) {
        super(exportTimeout);
        this.exporter = exporter;
        this.queue = PlatformDependent.newFixedMpscQueue(capacity);
        this.batchSize = batchSize;
        this.delayNanos = delay.toNanos();
        start();
    }

    /** An ended, sampled span, from any event loop: queued, or dropped and counted when the queue is full. */
    @Override
    public void add(RecordedSpan span) {
        if (!queue.offer(span)) {
            dropped.increment();
            return;
        }
        wakeIfReady();
    }

    @Override
    boolean ready() {
        return queue.size() >= batchSize;
    }

    @Override
    CompletableResultCode shutdownSender() {
        return exporter.shutdown();
    }

    @Override
    void run() {
        long deadline = System.nanoTime() + delayNanos;
        while (true) {
            boolean last = closing;
            if (last || queue.size() >= batchSize || System.nanoTime() - deadline >= 0) {
                do {
                    exportBatch();
                } while (queue.size() >= batchSize || (last && !queue.isEmpty()));
                if (last) {
                    return;
                }
                deadline = System.nanoTime() + delayNanos;
                continue;
            }
            sleep(deadline - System.nanoTime());
        }
    }

    private void exportBatch() {
        List<SpanData> batch = new ArrayList<>(batchSize); // spans keep arriving while it fills
        RecordedSpan s;
        while (batch.size() < batchSize && (s = queue.poll()) != null) {
            batch.add(s);
        }
        if (batch.isEmpty()) {
            return;
        }
        await(() -> exporter.export(batch));
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(5));
    }
}
