package dev.sluice.gateway.background;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;

/**
 * A background task's meters, by its name: {@code sluice_background_task_failures_total{task}} and
 * {@code sluice_background_task_duration_seconds{task}} (its count is the runs: a count that stops
 * rising is a task that no longer runs, or a thread stuck in another task; its max is the slowest
 * recent run). Registering is idempotent, so a task started again (health checks after a reload)
 * counts on.
 */
final class TaskMeters {
    private final Counter failures;
    private final Timer duration;

    TaskMeters(MeterRegistry registry, String task) {
        this.failures = Counter.builder("sluice.background.task.failures").tag("task", task)
                .description("runs of a periodic background task that threw (the task runs again at its next turn)")
                .register(registry);
        this.duration = Timer.builder("sluice.background.task.duration").tag("task", task)
                .description("time a periodic background task's runs took (count: its runs)")
                .register(registry);
    }

    void failed() {
        failures.increment();
    }

    void ran(long nanos) {
        duration.record(nanos, TimeUnit.NANOSECONDS);
    }
}
