package dev.sluice.gateway.background;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.regex.Pattern;

/**
 * Starts the gateway's {@link PeriodicTask}s, each with its meters, and stops those still running
 * on {@link #close} (with the server). Whoever starts a task may also stop it earlier (a health
 * checker replaced by a reload). Thread-safe.
 */
public final class BackgroundTasks implements AutoCloseable {
    /** A task's name is a metric label: short, fixed, snake_case. */
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_]*");

    private final MeterRegistry registry;
    private final Set<PeriodicTask> running = ConcurrentHashMap.newKeySet();

    public BackgroundTasks(MeterRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    /** Runs {@code body} on {@code executor} every {@code delay}, the first time after one delay. */
    public PeriodicTask every(String name, ScheduledExecutorService executor, Duration delay, Runnable body) {
        return every(name, executor, delay, delay, body);
    }

    /** Runs {@code body} on {@code executor} after {@code initialDelay}, then {@code delay} after each run ends. */
    public PeriodicTask every(String name, ScheduledExecutorService executor, Duration initialDelay, Duration delay,
                              Runnable body) {
        Objects.requireNonNull(executor, "executor");
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("task name: " + name + " (expected: snake_case, " + NAME + ")");
        }
        if (delay.isNegative() || delay.isZero() || initialDelay.isNegative()) {
            throw new IllegalArgumentException("task " + name + ": delay " + delay + ", initial delay "
                    + initialDelay + " (expected: delay > 0, initial delay >= 0)");
        }
        PeriodicTask task = new PeriodicTask(name, body, new TaskMeters(registry, name), running::remove);
        running.add(task);
        try {
            task.schedule(executor, initialDelay, delay);
        } catch (RuntimeException e) { // an executor already shut down
            running.remove(task);
            throw e;
        }
        return task;
    }

    /** Stops every task still running. */
    @Override
    public void close() {
        List.copyOf(running).forEach(PeriodicTask::close);
    }
}
