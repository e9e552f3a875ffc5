package dev.sluice.gateway.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.tracing.otlp.EncodedBatch;
import dev.sluice.gateway.tracing.otlp.TraceRequestEncoder;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.context.Context;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * OTLP/HTTP export with spans encoded where they end: the request the export thread assembles from
 * chunks is byte for byte the one the encoder makes of the same spans; chunks go when enough wait or
 * on the delay, also from a thread that went quiet; a collector that does not answer makes spans
 * dropped and counted, never a caller wait; close sends the rest.
 */
class EncodedSpanExportTest {
    private static final Resource RESOURCE = Resource.getDefault().merge(Resource.create(
            Attributes.of(AttributeKey.stringKey("service.name"), "gw")));
    private final List<ExportTraceServiceRequest> posts = new CopyOnWriteArrayList<>();
    private final List<Integer> counts = new CopyOnWriteArrayList<>();
    private final CountDownLatch release = new CountDownLatch(1);
    private volatile boolean hold;

    private final EncodedSpanExport.Post post = new EncodedSpanExport.Post() {
        @Override
        public CompletableResultCode post(byte[] body, int length, int spans, Runnable abandoned) {
            counts.add(spans); // before posts: a test that saw a post sees its count
            try {
                posts.add(ExportTraceServiceRequest.parseFrom(Arrays.copyOf(body, length)));
            } catch (Exception e) {
                throw new AssertionError("not an OTLP request", e);
            }
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
        public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
        }
    };

    // one traced request: a server span and an admission span
    private static void requests(SpanRecorder recorder, int n) {
        requests(recorder, n, "r");
    }

    private static void requests(SpanRecorder recorder, int n, String ridPrefix) {
        for (int i = 0; i < n; i++) {
            RequestTrace t = RequestTrace.start(recorder, Sampler.alwaysOn(), Context.root(),
                    new RequestTrace.Facts("chat", "m", 1, "/v1/chat/completions", ridPrefix + i, false), System.nanoTime());
            t.admissionStarted("standard", "t", 10);
            t.admitted("http://p:1", "http://d:2", 0);
            t.end(200, "ok", 1, "");
        }
    }

    private int spansPosted() {
        return posts.stream().mapToInt(r -> r.getResourceSpans(0).getScopeSpans(0).getSpansCount()).sum();
    }

    private void awaitSpans(int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (spansPosted() < n && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
    }

    @Test
    void chunksWrappedInTheEnvelopeAreByteForByteTheEncodersRequest() throws Exception {
        List<RecordedSpan> ended = new ArrayList<>();
        requests(new SpanRecorder(RESOURCE, ended::add), 30);
        TraceRequestEncoder chunk1 = new TraceRequestEncoder(64);
        TraceRequestEncoder chunk2 = new TraceRequestEncoder(64);
        for (int i = 0; i < ended.size(); i++) {
            (i < 17 ? chunk1 : chunk2).append(ended.get(i));
        }
        EncodedBatch batch = new EncodedBatch(RESOURCE, InstrumentationScopeInfo.create(SpanRecorder.SCOPE));
        batch.begin(chunk1.size() + chunk2.size());
        batch.add(chunk1.array(), chunk1.size());
        batch.add(chunk2.array(), chunk2.size());
        batch.finish();
        TraceRequestEncoder whole = new TraceRequestEncoder();
        whole.encode(new ArrayList<SpanData>(ended));
        assertThat(Arrays.copyOf(batch.array(), batch.size())).isEqualTo(Arrays.copyOf(whole.array(), whole.size()));
        assertThat(ExportTraceServiceRequest.parseFrom(Arrays.copyOf(batch.array(), batch.size()))
                .getResourceSpans(0).getScopeSpans(0).getSpansCount()).isEqualTo(60);
    }

    @Test
    void fullChunksGoWhenEnoughWaitAndAQuietThreadsSpansOnTheDelayNothingDropped() throws Exception {
        EncodedSpanExport export = new EncodedSpanExport(RESOURCE, post, 64, 2, Duration.ofMillis(300),
                Duration.ofSeconds(5));
        SpanRecorder recorder = new SpanRecorder(RESOURCE, export::add);
        // a chunk takes ~32 KiB: 2,000 requests (4,000 spans) fill several, posted two chunks at a time
        Thread other = new Thread(() -> requests(recorder, 3, "other")); // a thread that ends 6 spans and goes away
        other.start();
        other.join();
        requests(recorder, 2_000);
        awaitSpans(4_006);
        assertThat(spansPosted()).isEqualTo(4_006);
        assertThat(counts.stream().mapToInt(Integer::intValue).sum()).isEqualTo(4_006);
        assertThat(posts.size()).as("several posts of whole chunks, then the rest on the delay").isGreaterThan(2);
        assertThat(export.dropped()).isZero();
        List<String> rids = new ArrayList<>();
        posts.forEach(r -> r.getResourceSpans(0).getScopeSpans(0).getSpansList().forEach(s -> s.getAttributesList()
                .stream().filter(a -> a.getKey().equals("sluice.request_id")).forEach(a -> rids.add(a.getValue().getStringValue()))));
        assertThat(rids).as("every request's server span, once").hasSize(2_003).doesNotHaveDuplicates();
        export.close(Duration.ofSeconds(5));
    }

    @Test
    void aCollectorThatDoesNotAnswerMakesSpansDroppedAndCountedAndCloseSendsTheRest() throws Exception {
        hold = true;
        EncodedSpanExport export = new EncodedSpanExport(RESOURCE, post, 2, 1, Duration.ofMillis(50),
                Duration.ofSeconds(20));
        SpanRecorder recorder = new SpanRecorder(RESOURCE, export::add);
        requests(recorder, 1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (posts.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(counts).containsExactly(2); // the export thread is now stuck posting those two spans
        Thread caller = new Thread(() -> requests(recorder, 5_000)); // 10,000 spans: two chunks wait, the rest dropped
        caller.start();
        caller.join(TimeUnit.SECONDS.toMillis(8)); // the collector is held for 10 s: a caller that waited would still be here
        assertThat(caller.isAlive()).as("no caller waits for the collector").isFalse();
        assertThat(export.dropped()).isGreaterThan(5_000);
        release.countDown();
        export.close(Duration.ofSeconds(5));
        long dropped = export.dropped();
        assertThat(counts.stream().mapToInt(Integer::intValue).sum() + dropped)
                .as("every span posted or counted as dropped").isEqualTo(2 + 10_000);
        assertThat(spansPosted()).isEqualTo(2 + 10_000 - (int) dropped);
    }

    @Test
    void moreThreadsThanTheQueueHasRoomForLoseNothingOnTheSweep() throws Exception {
        EncodedSpanExport export = new EncodedSpanExport(RESOURCE, post, 4, 2, Duration.ofMillis(100),
                Duration.ofSeconds(5));
        SpanRecorder recorder = new SpanRecorder(RESOURCE, export::add);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 12; i++) { // 12 threads, each a partial chunk, against a queue of 4 chunks
            int n = i;
            threads.add(new Thread(() -> requests(recorder, 5, "t" + n + "-")));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        awaitSpans(120);
        assertThat(spansPosted()).isEqualTo(120);
        assertThat(export.dropped()).isZero();
        assertThat(counts).as("posts of two chunks at most").allMatch(n -> n <= 2 * 10);
        export.close(Duration.ofSeconds(5));
    }
}
