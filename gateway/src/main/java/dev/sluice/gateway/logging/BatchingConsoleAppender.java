package dev.sluice.gateway.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.UnsynchronizedAppenderBase;
import ch.qos.logback.core.encoder.Encoder;
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Writes log lines to stdout from its own thread, in batches, so that an event loop logging a
 * request line pays only for formatting the message and one lock-free enqueue: no encoding, no
 * write system call, and no thread wake-up (logback's {@code AsyncAppender} signals its worker on
 * every event, and that futex wake-up cost an event loop more than the synchronous write did).
 *
 * <p>The writer wakes every {@code flushMillis} (default 20 ms), encodes what is queued and writes
 * it with one flush: a line reaches stdout at most that late. Bounded: past {@code queueSize}
 * waiting lines, new ones are dropped rather than stall request handling, and the writer says how
 * many in a line of its own. On stop (the JVM's shutdown hook stops logback) everything queued is
 * written.
 */
public final class BatchingConsoleAppender extends UnsynchronizedAppenderBase<ILoggingEvent> {
    private final ConcurrentLinkedQueue<ILoggingEvent> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicLong dropped = new AtomicLong();
    private Encoder<ILoggingEvent> encoder;
    private int queueSize = 16_384;
    private long flushMillis = 20;
    private OutputStream out;
    private OutputStream target; // stdout unless a test sets one
    private Thread writer;
    private volatile boolean stopping;

    public void setEncoder(Encoder<ILoggingEvent> encoder) {
        this.encoder = encoder;
    }

    public void setQueueSize(int queueSize) {
        this.queueSize = queueSize;
    }

    public void setFlushMillis(long flushMillis) {
        this.flushMillis = flushMillis;
    }

    /** Where lines go instead of stdout (tests). */
    void setTarget(OutputStream target) {
        this.target = target;
    }

    @Override
    public void start() {
        if (encoder == null) {
            addError("no encoder for appender " + name);
            return;
        }
        out = new BufferedOutputStream(target != null ? target : new FileOutputStream(FileDescriptor.out), 64 * 1024);
        stopping = false;
        writer = new Thread(this::writeLoop, "sluice-log-writer");
        writer.setDaemon(true);
        writer.start();
        super.start();
    }

    @Override
    protected void append(ILoggingEvent event) {
        if (queued.incrementAndGet() > queueSize) {
            queued.decrementAndGet();
            dropped.incrementAndGet();
            return;
        }
        event.prepareForDeferredProcessing(); // the message and thread name, taken now
        queue.offer(event);
    }

    @Override
    public void stop() {
        if (!isStarted()) {
            return;
        }
        super.stop();
        stopping = true;
        LockSupport.unpark(writer);
        try {
            writer.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void writeLoop() {
        long nanos = TimeUnit.MILLISECONDS.toNanos(flushMillis);
        while (true) {
            boolean last = stopping;
            drain();
            if (last) {
                return;
            }
            LockSupport.parkNanos(this, nanos);
        }
    }

    private void drain() {
        try {
            long lost = dropped.getAndSet(0);
            if (lost > 0) {
                out.write(("WARN  sluice-log-writer: " + lost + " log lines dropped (stdout could not keep up)\n")
                        .getBytes(StandardCharsets.UTF_8));
            }
            ILoggingEvent e;
            boolean wrote = lost > 0;
            while ((e = queue.poll()) != null) {
                queued.decrementAndGet();
                out.write(encoder.encode(e));
                wrote = true;
            }
            if (wrote) {
                out.flush();
            }
        } catch (IOException | RuntimeException ex) {
            addError("cannot write log lines to stdout", ex);
        }
    }
}
