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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * OTLP/HTTP export with each span encoded where it ends: the thread that ends a span (a request's
 * event loop) appends its protobuf to that thread's chunk at once and hands a chunk of {@link
 * #CHUNK_BYTES} over to a bounded queue; one export thread wraps the waiting chunks in the request's
 * envelope ({@link EncodedBatch}: bytes copied, no span read) and posts them. The span object is
 * garbage as soon as it ends. When the export thread encoded spans the event loop had written
 * milliseconds before, it took 3 to 5 µs of the core a request against 1 to 2 µs now
 * (docs/benchmarks.md, "Tracing"); taking the spans every millisecond, fresher, did not lower it.
 * Bounded: at most {@code maxChunks} chunks wait; a chunk that finds the queue full is dropped and
 * its spans counted, so a collector that stops answering costs no memory and no request any time.
 * A chunk not yet full is taken from its thread every {@code delay}, so no span waits longer than
 * that on a quiet event loop. A writer's chunk is guarded by its own lock, which only its thread
 * takes, except for that sweep.
 */
final class EncodedSpanExport implements SpanExport {
    private static final Logger log = LoggerFactory.getLogger(Tracing.class);
    /** A thread hands its chunk over once it holds this many bytes (about a hundred spans). */
    static final int CHUNK_BYTES = 32 * 1024;

    /** Posts one request of {@code spans} spans, {@code body[0, length)}; {@code abandoned} as in OtlpHttpSender. */
    interface Post {
        CompletableResultCode post(byte[] body, int length, int spans, Runnable abandoned);

        CompletableResultCode shutdown();
    }

    private record Chunk(byte[] bytes, int length, int spans) {
    }

    /** One thread's chunk in the making. */
    private static final class Writer {
        final WeakReference<Thread> owner = new WeakReference<>(Thread.currentThread());
        final TraceRequestEncoder encoder = new TraceRequestEncoder(CHUNK_BYTES * 2);
        int spans;
    }

    private final Post post;
    private final EncodedBatch batch;
    private final int maxChunks;
    private final int batchChunks;
    private final long delayNanos;
    private final Duration exportTimeout;
    private final Queue<Chunk> full;
    private final Queue<byte[]> free;
    private final List<Writer> writers = new CopyOnWriteArrayList<>();
    private final FastThreadLocal<Writer> local = new FastThreadLocal<>() {
        @Override
        protected Writer initialValue() {
            Writer w = new Writer();
            writers.add(w);
            return w;
        }
    };
    private final LongAdder dropped = new LongAdder();
    private final Thread thread;
    private final List<Chunk> sending = new ArrayList<>();
    private volatile boolean parked;
    private volatile boolean closing;

    /**
     * Spans of the gateway's scope and {@code resource} posted with {@code post}: at most {@code
     * maxChunks} chunks wait, a post takes {@code batchChunks} of them (when that many wait, or every
     * {@code delay}).
     */
    EncodedSpanExport(Resource resource, Post post, int maxChunks, int batchChunks, Duration delay,
                      Duration exportTimeout) {
        this.post = post;
        this.batch = new EncodedBatch(resource, InstrumentationScopeInfo.create(SpanRecorder.SCOPE));
        this.maxChunks = maxChunks;
        this.batchChunks = batchChunks;
        this.delayNanos = delay.toNanos();
        this.exportTimeout = exportTimeout;
        this.full = PlatformDependent.newFixedMpscQueue(maxChunks);
        this.free = PlatformDependent.newFixedMpmcQueue(maxChunks);
        this.thread = new Thread(this::run, "sluice-tracing-export");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public void add(RecordedSpan span) {
        if (closing) {
            dropped.increment();
            return;
        }
        Writer w = local.get();
        synchronized (w) {
            w.encoder.append(span);
            w.spans++;
            if (w.encoder.size() >= CHUNK_BYTES) {
                handOver(w);
            }
        }
    }

    // under w's lock: its chunk to the queue (or dropped and counted when the queue is full)
    private void handOver(Writer w) {
        int length = w.encoder.size();
        int spans = w.spans;
        w.spans = 0;
        if (full.size() >= maxChunks) {
            w.encoder.discard();
            dropped.add(spans);
            return;
        }
        byte[] next = free.poll();
        Chunk chunk = new Chunk(w.encoder.handOver(next != null ? next : new byte[CHUNK_BYTES * 2]), length, spans);
        if (!full.offer(chunk)) { // filled meanwhile by another thread
            dropped.add(spans);
            free.offer(chunk.bytes);
            return;
        }
        if (parked && full.size() >= batchChunks) {
            LockSupport.unpark(thread);
        }
    }

    @Override
    public long dropped() {
        return dropped.sum();
    }

    private void run() {
        long sweep = System.nanoTime() + delayNanos;
        while (true) {
            boolean last = closing;
            long now = System.nanoTime();
            if (last || now - sweep >= 0) { // on a timer of its own: full chunks going out do not delay it
                sweepWriters();
                sendAll();
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
            parked = true;
            if (full.size() < batchChunks && !closing) { // checked again after announcing the park: no lost wake-up
                LockSupport.parkNanos(this, sweep - now);
            }
            parked = false;
        }
    }

    // every thread's chunk in the making goes to the queue; a writer whose thread has ended is let go
    private void sweepWriters() {
        for (Writer w : writers) {
            synchronized (w) {
                if (w.spans > 0) {
                    handOver(w);
                }
            }
            Thread owner = w.owner.get();
            if (owner == null || !owner.isAlive()) {
                writers.remove(w);
            }
        }
    }

    // what waits, in posts of batchChunks chunks at most
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
        try {
            post.post(batch.array(), batch.size(), spans, batch::renew)
                    .join(exportTimeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RuntimeException e) { // the thread must outlive any sender's failure
            log.warn("tracing: export failed unexpectedly cause=\"{}\"", e.toString());
        }
    }

    @Override
    public void close(Duration wait) {
        closing = true;
        LockSupport.unpark(thread);
        try {
            thread.join(wait.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Writer w : writers) { // a span that ended as the last sweep ran: counted, not lost unseen
            synchronized (w) {
                dropped.add(w.spans);
                w.spans = 0;
                w.encoder.discard();
            }
        }
        post.shutdown().join(wait.toMillis(), TimeUnit.MILLISECONDS);
    }
}
