package dev.sluice.gateway.tracing;

import dev.sluice.gateway.tracing.otlp.EncodedBatch;
import dev.sluice.gateway.tracing.otlp.TraceRequestEncoder;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.internal.PlatformDependent;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * OTLP/HTTP export with each span encoded where it ends: the thread that ends a span (a request's
 * event loop) appends its protobuf to that thread's chunk at once and hands a chunk of {@link
 * #CHUNK_BYTES} over to a bounded queue; one export thread wraps the waiting chunks in the request's
 * envelope ({@link EncodedBatch}: bytes copied, no span read) and posts them. The span object is
 * garbage as soon as it ends. Encoding a batch of spans the event loop wrote milliseconds before
 * took the export thread 2.5 to 6.7 µs of the core a request; it now takes 0.8 to 2.0 µs (copying
 * and posting), and the event loop pays for the encoding instead, about 0.3 µs a span with its data
 * at hand (RequestTraceBenchmark); in paired runs the gateway's CPU a request fell for an SGLang PD
 * request (five spans) and did not move beyond the noise for a unified one (three): docs/benchmarks.md,
 * "Tracing". Taking the spans to the export thread every millisecond, fresher, did not lower its cost,
 * nor did each event loop encoding the spans it ended 32 at a time.
 * Bounded: at most {@code maxChunks} full chunks wait (and as many spare arrays); a chunk that finds
 * the queue full is dropped and its spans counted, so a collector that stops answering costs a fixed
 * amount of memory (the queue, its spare arrays, one chunk a thread that ends spans) and no request
 * any time. A chunk not yet full is taken from its thread every {@code delay} and posted with the
 * rest, so on a quiet event loop a span waits that long plus the posts ahead of it. A writer's chunk
 * is guarded by its own lock, which only its thread takes, except for that sweep.
 */
final class EncodedSpanExport extends ExportThread {
    /** A thread hands its chunk over once it holds this many bytes (about a hundred spans). */
    static final int CHUNK_BYTES = 32 * 1024;

    /** Posts one request of {@code spans} spans, {@code body[0, length)}; {@code abandoned} as in OtlpHttpSender. */
    interface Post {
        CompletableResultCode post(byte[] body, int length, int spans, Runnable abandoned);

        CompletableResultCode shutdown();
    }

    private record Chunk(byte[] bytes, int length, int spans) {
    }

    /** One thread's chunk in the making; its encoder is let go (null) when the export stops. */
    private static final class Writer {
        final WeakReference<Thread> owner = new WeakReference<>(Thread.currentThread());
        TraceRequestEncoder encoder = new TraceRequestEncoder(CHUNK_BYTES * 2);
        int spans;
    }

    /**
     * Each thread's writer for one export. A thread keeps a FastThreadLocal it used for as long as it lives
     * (Netty's map of the thread holds it), and an export a reload replaced must not stay reachable through
     * every event loop: this class holds nothing of the export but the list its writers join, and the
     * writers' encoders are let go when it stops, so what an event loop keeps of a stopped export is a few
     * small objects.
     */
    private static final class Writers extends FastThreadLocal<Writer> {
        final List<Writer> all = new CopyOnWriteArrayList<>();

        @Override
        protected Writer initialValue() {
            Writer w = new Writer();
            all.add(w);
            return w;
        }
    }

    private final Post post;
    private final EncodedBatch batch;
    private final int maxChunks;
    private final int batchChunks;
    private final long delayNanos;
    private final Queue<Chunk> full;
    private final Queue<byte[]> free;
    private final Writers local = new Writers();
    private final List<Writer> writers = local.all;
    private final List<Chunk> sending = new ArrayList<>();

    /**
     * Spans of the gateway's scope and {@code resource} posted with {@code post}: at most {@code
     * maxChunks} chunks wait, a post takes {@code batchChunks} of them (when that many wait, or every
     * {@code delay}).
     */
    EncodedSpanExport(Resource resource, Post post, int maxChunks, int batchChunks, Duration delay,
                      Duration exportTimeout) {
        super(exportTimeout);
        this.post = post;
        this.batch = new EncodedBatch(resource, InstrumentationScopeInfo.create(SpanRecorder.SCOPE));
        this.maxChunks = maxChunks;
        this.batchChunks = batchChunks;
        this.delayNanos = delay.toNanos();
        this.full = PlatformDependent.newFixedMpscQueue(maxChunks);
        this.free = PlatformDependent.newFixedMpmcQueue(maxChunks);
        start();
    }

    @Override
    public void add(RecordedSpan span) {
        if (closing) {
            dropped.increment();
            return;
        }
        Writer w = local.get();
        synchronized (w) {
            if (w.encoder == null) { // the export stopped while this span ended
                dropped.increment();
                return;
            }
            int before = w.encoder.size();
            try {
                w.encoder.append(span);
            } catch (RuntimeException e) { // half a span would spoil the whole post: take it back out
                w.encoder.truncate(before);
                dropped.increment();
                log.warn("tracing: a span could not be encoded and is dropped span={} cause=\"{}\"", span, e.toString());
                return;
            }
            w.spans++;
            if (w.encoder.size() >= CHUNK_BYTES) {
                handOver(w);
            }
        }
    }

    // under w's lock: its chunk, taken, and a fresh array in its place
    private Chunk take(Writer w) {
        int length = w.encoder.size();
        int spans = w.spans;
        w.spans = 0;
        byte[] next = free.poll();
        return new Chunk(w.encoder.handOver(next != null ? next : new byte[CHUNK_BYTES * 2]), length, spans);
    }

    // under w's lock: its full chunk to the queue (or dropped and counted when the queue is full)
    private void handOver(Writer w) {
        if (full.size() >= maxChunks) {
            dropped.add(w.spans);
            w.spans = 0;
            w.encoder.discard();
            return;
        }
        Chunk chunk = take(w);
        if (!full.offer(chunk)) { // filled meanwhile by another thread
            dropped.add(chunk.spans);
            free.offer(chunk.bytes);
            return;
        }
        wakeIfReady();
    }

    @Override
    boolean ready() {
        return full.size() >= batchChunks;
    }

    @Override
    CompletableResultCode shutdownSender() {
        return post.shutdown();
    }

    @Override
    void run() {
        long sweep = System.nanoTime() + delayNanos;
        while (true) {
            boolean last = closing;
            long now = System.nanoTime();
            if (last || now - sweep >= 0) { // on a timer of its own: full chunks going out do not delay it
                sendAll();
                sweepWriters();
                if (!sending.isEmpty()) {
                    send();
                }
                if (last) {
                    return;
                }
                sweep = System.nanoTime() + delayNanos;
                continue;
            }
            if (full.size() >= batchChunks) {
                sendAll();
                continue;
            }
            sleep(sweep - now);
        }
    }

    // every thread's chunk in the making, straight into the posts (not through the queue, whose room is for
    // full chunks: a partial chunk a thread would otherwise take a slot each); a writer whose thread has
    // ended is let go, after its last chunk (a dead thread appends nothing more)
    private void sweepWriters() {
        for (Writer w : writers) {
            Thread owner = w.owner.get();
            boolean gone = owner == null || !owner.isAlive();
            Chunk c = null;
            synchronized (w) {
                if (w.spans > 0 && w.encoder != null) { // null: let go by a close that gave up waiting for this thread
                    c = take(w);
                }
            }
            if (c != null) {
                sending.add(c);
                if (sending.size() == batchChunks) {
                    send();
                }
            }
            if (gone) {
                writers.remove(w);
            }
        }
    }

    // the full chunks waiting, in posts of batchChunks chunks at most
    private void sendAll() {
        Chunk c;
        while ((c = full.poll()) != null) {
            sending.add(c);
            if (sending.size() == batchChunks) {
                send();
            }
        }
        if (!sending.isEmpty()) {
            send();
        }
    }

    private void send() {
        int length = 0;
        int spans = 0;
        for (Chunk c : sending) {
            length += c.length;
            spans += c.spans;
        }
        batch.begin(length);
        for (Chunk c : sending) {
            batch.add(c.bytes, c.length);
        }
        batch.finish();
        for (Chunk c : sending) {
            free.offer(c.bytes); // copied into the body: the array can take spans again
        }
        sending.clear();
        int n = spans;
        await(() -> post.post(batch.array(), batch.size(), n, batch::renew));
    }

    @Override
    void afterStop() {
        for (Writer w : writers) { // a span that ended as the last sweep ran: counted, not lost unseen
            synchronized (w) {
                dropped.add(w.spans);
                w.spans = 0;
                w.encoder = null; // let go: the thread's map keeps the writer itself
            }
        }
        writers.clear();
        full.clear();
        free.clear();
    }
}
