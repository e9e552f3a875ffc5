package dev.sluice.gateway.tracing;

import io.netty.util.internal.PlatformDependent;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bounded queue between the event loops that end spans and the one thread that exports them
 * in batches: a span is offered to a lock-free multi-producer queue of {@code capacity} spans (a
 * full queue drops it and counts it, the request never waits), and the export thread wakes when a
 * batch is full or the delay has passed. What the SDK's BatchSpanProcessor does, without turning
 * each span into an immutable copy first: a {@link RecordedSpan} is no longer written once ended,
 * so the encoder reads it as it is.
 */
final class SpanExportQueue implements SpanExport, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Tracing.class);
    private final Queue<RecordedSpan> queue;
    private final int batchSize;
    private final long delayNanos;
    private final Duration exportTimeout;
    private final SpanExporter exporter;
    private final LongAdder dropped = new LongAdder();
    private final Thread thread;
    private volatile boolean parked;
    private volatile boolean closing;

    SpanExportQueue(SpanExporter exporter, int capacity, int batchSize, Duration delay, Duration exportTimeout) {
        this.exporter = exporter;
        this.queue = PlatformDependent.newFixedMpscQueue(capacity);
        this.batchSize = batchSize;
        this.delayNanos = delay.toNanos();
        this.exportTimeout = exportTimeout;
        this.thread = new Thread(this::run, "sluice-tracing-export");
        thread.setDaemon(true);
        thread.start();
    }

    /** An ended, sampled span, from any event loop: queued, or dropped and counted when the queue is full. */
    @Override
    public void add(RecordedSpan span) {
        if (!queue.offer(span)) {
            dropped.increment();
            return;
        }
        if (parked && queue.size() >= batchSize) {
            LockSupport.unpark(thread);
        }
    }

    /** Spans dropped so far because the queue was full. */
    @Override
    public long dropped() {
        return dropped.sum();
    }

    private void run() {
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
            parked = true;
            if (queue.size() < batchSize && !closing) { // checked again after announcing the park: no lost wake-up
                LockSupport.parkNanos(this, deadline - System.nanoTime());
            }
            parked = false;
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
        try {
            CompletableResultCode result = exporter.export(batch);
            result.join(exportTimeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RuntimeException e) { // the thread must outlive any exporter's failure
            log.warn("tracing: export failed unexpectedly cause=\"{}\"", e.toString());
        }
    }

    /** Exports what is queued (waiting up to {@code wait}) and stops the thread and the exporter. */
    @Override
    public void close(Duration wait) {
        closing = true;
        LockSupport.unpark(thread);
        try {
            thread.join(wait.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        exporter.shutdown().join(wait.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(5));
    }
}
