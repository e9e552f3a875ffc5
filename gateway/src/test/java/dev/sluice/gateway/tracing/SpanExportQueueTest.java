package dev.sluice.gateway.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The export queue: batches go out whole or on the delay, a full queue drops and counts, close sends the rest. */
class SpanExportQueueTest {
    private final List<Integer> batches = new CopyOnWriteArrayList<>();
    private final CountDownLatch release = new CountDownLatch(1);
    private volatile boolean hold;

    private final SpanExporter exporter = new SpanExporter() {
        @Override
        public CompletableResultCode export(Collection<SpanData> spans) {
            batches.add(spans.size());
            if (hold) {
                try {
                    release.await(10, TimeUnit.SECONDS); // a collector that does not answer
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode flush() {
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
        }
    };

    private static void spans(SpanRecorder recorder, int n) {
        for (int i = 0; i < n; i++) {
            RequestTrace.start(recorder, Sampler.alwaysOn(), Context.root(),
                    new RequestTrace.Facts("chat", "m", 1, "/v1/chat/completions", "r" + i, false), System.nanoTime())
                    .end(200, "ok", 1, "");
        }
    }

    @Test
    void fullBatchesGoAtOnceAndTheRestOnTheDelayNothingDropped() throws Exception {
        SpanExportQueue queue = new SpanExportQueue(exporter, 64, 8, Duration.ofMillis(200), Duration.ofSeconds(5));
        spans(new SpanRecorder(Resource.getDefault(), queue::add), 20);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (batches.stream().mapToInt(Integer::intValue).sum() < 20 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(batches).containsExactly(8, 8, 4);
        assertThat(queue.dropped()).isZero();
        queue.close();
    }

    @Test
    void aFullQueueDropsAndCountsWhatItCannotHoldAndCloseSendsTheRest() throws Exception {
        hold = true;
        SpanExportQueue queue = new SpanExportQueue(exporter, 16, 4, Duration.ofMillis(50), Duration.ofSeconds(5));
        SpanRecorder recorder = new SpanRecorder(Resource.getDefault(), queue::add);
        spans(recorder, 4);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (batches.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(batches).containsExactly(4); // the export thread is now stuck in that batch
        spans(recorder, 30);
        assertThat(queue.dropped()).as("16 held, 14 dropped, the caller never waited").isEqualTo(14);
        release.countDown();
        queue.close();
        assertThat(batches.stream().mapToInt(Integer::intValue).sum()).isEqualTo(4 + 16);
    }
}
