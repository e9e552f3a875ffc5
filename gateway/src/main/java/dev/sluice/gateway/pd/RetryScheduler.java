package dev.sluice.gateway.pd;

import dev.sluice.gateway.config.RetryConfig;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The wait between a failed attempt and the request's return to admission for another pair: its
 * length ({@link RetryPlan}) and the one timer that ends it. Event-loop confined.
 */
final class RetryScheduler {
    private final RetryConfig config;
    private final EventLoop loop;
    private ScheduledFuture<?> timer;

    RetryScheduler(RetryConfig config, EventLoop loop) {
        this.config = config;
        this.loop = loop;
    }

    /** The back-off before the next attempt, or -1 when no retry is left or it would end past {@code deadlineNanos}. */
    long backoffNanos(int retriesSoFar, long deadlineNanos) {
        return RetryPlan.backoffNanos(config, retriesSoFar, System.nanoTime(), deadlineNanos);
    }

    /** Runs {@code requeue} after {@code backoffNanos}, unless cancelled first. */
    void schedule(long backoffNanos, Runnable requeue) {
        timer = loop.schedule(() -> {
            timer = null;
            requeue.run();
        }, backoffNanos, TimeUnit.NANOSECONDS);
    }

    /** A retry is waiting: the request has not ended although no attempt runs. */
    boolean pending() {
        return timer != null;
    }

    void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }
}
