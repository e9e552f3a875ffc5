package dev.sluice.gateway.background;

import dev.sluice.gateway.logging.LogThrottle;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One concern's periodic work (a health round, the expiry sweep, saving the prefill rates): run on
 * its executor with a fixed delay between the end of a run and the start of the next. A run that
 * throws is caught, logged and counted, and the task runs again at its next turn: a bare
 * {@code scheduleWithFixedDelay} would cancel it for good on the first exception, silently.
 * Started by {@link BackgroundTasks#every}; {@link #close} stops it.
 *
 * <p>Logging: the first failure after a success is logged at WARN with its stack trace; repeats of
 * a failing task are one line each, at most one a second (a 20 ms task failing would otherwise
 * write 50 stack traces a second); the first success after failures says so at INFO.
 */
public final class PeriodicTask implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PeriodicTask.class);

    private final String name;
    private final Runnable body;
    private final TaskMeters meters;
    private final Consumer<PeriodicTask> onClose;
    private final LogThrottle lines = new LogThrottle(1);
    /** Failed runs since the last success; touched only by the runs, which never overlap. */
    private long failing;
    private volatile ScheduledFuture<?> future;

    PeriodicTask(String name, Runnable body, TaskMeters meters, Consumer<PeriodicTask> onClose) {
        this.name = Objects.requireNonNull(name, "name");
        this.body = Objects.requireNonNull(body, "body");
        this.meters = meters;
        this.onClose = onClose;
    }

    void schedule(ScheduledExecutorService executor, Duration initialDelay, Duration delay) {
        future = executor.scheduleWithFixedDelay(this::runOnce, initialDelay.toNanos(), delay.toNanos(),
                TimeUnit.NANOSECONDS);
    }

    /** One run: never throws, so the executor keeps the task scheduled. */
    void runOnce() {
        long start = System.nanoTime();
        try {
            body.run();
            if (failing > 0) {
                log.info("background task recovered task={} failed_runs={}", name, failing);
                failing = 0;
            }
        } catch (Throwable t) {
            // Errors too: an OutOfMemoryError from one oversized allocation, an assertion, a
            // NoClassDefFoundError must not end the concern for the rest of the process's life
            failing++;
            meters.failed();
            if (failing == 1) {
                lines.tryAcquire(System.nanoTime()); // the stack trace line counts against the throttle
                log.warn("background task failed task={} error=\"{}\"", name, t.toString(), t);
            } else {
                long suppressed = lines.tryAcquire(System.nanoTime());
                if (suppressed >= 0) {
                    log.warn("background task failed task={} failed_runs={} suppressed_lines={} error=\"{}\"", name,
                            failing, suppressed, t.toString());
                }
            }
        } finally {
            meters.ran(System.nanoTime() - start);
        }
    }

    public String name() {
        return name;
    }

    /** Whether it is still scheduled (not closed, and its executor has not dropped it). */
    public boolean scheduled() {
        ScheduledFuture<?> f = future;
        return f != null && !f.isDone();
    }

    /** Stops the task; a run in progress finishes. Idempotent. */
    @Override
    public void close() {
        ScheduledFuture<?> f = future;
        if (f != null) {
            f.cancel(false);
        }
        onClose.accept(this);
    }
}
