package dev.sluice.gateway.tracing;

import io.opentelemetry.sdk.common.CompletableResultCode;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one background thread of a {@link SpanExport} and what every export shares around it: the
 * drop count, the park that a span's thread may cut short (announced first, then the condition
 * checked again, so no wake-up is lost), waiting for a post within the export timeout whatever it
 * throws, and the close that lets the thread send what is held, then stops the sender.
 */
abstract class ExportThread implements SpanExport {
    static final Logger log = LoggerFactory.getLogger(Tracing.class);
    final LongAdder dropped = new LongAdder();
    volatile boolean closing;
    private final Duration exportTimeout;
    private final Thread thread;
    private volatile boolean parked;

    ExportThread(Duration exportTimeout) {
        this.exportTimeout = exportTimeout;
        this.thread = new Thread(this::run, "sluice-tracing-export");
        thread.setDaemon(true);
    }

    /** Starts the thread: the subclass's constructor calls it last. */
    final void start() {
        thread.start();
    }

    /** The thread's loop; returns once {@link #closing} is seen and everything held is sent. */
    abstract void run();

    /** Whether there is work for the thread now (read by a span's thread and by the park). */
    abstract boolean ready();

    /** Stops what sends (after the thread has ended, or given up on). */
    abstract CompletableResultCode shutdownSender();

    /** From a span's thread: wakes the export thread if it sleeps and there is work. */
    final void wakeIfReady() {
        if (parked && ready()) {
            LockSupport.unpark(thread);
        }
    }

    /** On the export thread: sleeps up to {@code nanos}, unless there is work or the export is closing. */
    final void sleep(long nanos) {
        parked = true;
        if (!ready() && !closing) { // checked again after announcing the park: no lost wake-up
            LockSupport.parkNanos(this, Math.max(1, nanos));
        }
        parked = false;
    }

    /** On the export thread: sends with {@code send} and waits for the answer within the export timeout. */
    final void await(Supplier<CompletableResultCode> send) {
        try {
            send.get().join(exportTimeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RuntimeException e) { // the thread must outlive any sender's failure
            log.warn("tracing: export failed unexpectedly cause=\"{}\"", e.toString());
        }
    }

    @Override
    public final long dropped() {
        return dropped.sum();
    }

    /** Sends what is held (waiting up to {@code wait}) and stops the thread and the sender. */
    @Override
    public void close(Duration wait) {
        closing = true;
        LockSupport.unpark(thread);
        try {
            thread.join(wait.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        afterStop();
        shutdownSender().join(wait.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** After the thread has stopped, before the sender does (nothing unless overridden). */
    void afterStop() {
    }
}
