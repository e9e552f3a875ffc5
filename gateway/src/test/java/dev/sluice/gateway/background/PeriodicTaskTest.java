package dev.sluice.gateway.background;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sluice.testbed.testing.Poll;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class PeriodicTaskTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration TICK = Duration.ofMillis(2);

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final BackgroundTasks tasks = new BackgroundTasks(registry);
    private final ScheduledExecutorService one = Executors.newSingleThreadScheduledExecutor();
    private final ScheduledExecutorService other = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() throws InterruptedException {
        tasks.close();
        one.shutdownNow();
        other.shutdownNow();
        assertThat(one.awaitTermination(5, TimeUnit.SECONDS) && other.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
    }

    private double failures(String task) {
        return registry.get("sluice.background.task.failures").tag("task", task).counter().count();
    }

    private long runs(String task) {
        return registry.get("sluice.background.task.duration").tag("task", task).timer().count();
    }

    /** A bare scheduleWithFixedDelay would have run this once: its first exception cancels it. */
    @Test
    void aTaskThatThrowsOnItsFirstRunsKeepsRunningAndCountsItsFailures() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        PeriodicTask task = tasks.every("flaky", one, TICK, () -> {
            int n = calls.incrementAndGet();
            if (n == 1) {
                throw new AssertionError("an Error, not only exceptions");
            }
            if (n <= 3) {
                throw new IllegalStateException("failure " + n);
            }
        });

        assertThat(Poll.eventually(WAIT, () -> calls.get() >= 8)).as("runs after its failures: %s", calls).isTrue();
        assertThat(failures("flaky")).isEqualTo(3.0);
        assertThat(Poll.eventually(WAIT, () -> runs("flaky") >= 8)).as("every run timed").isTrue();
        assertThat(task.scheduled()).isTrue();
    }

    @Test
    void aSlowTaskOnOneExecutorDoesNotDelayATaskOnAnother() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        tasks.every("slow", one, TICK, () -> {
            entered.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        AtomicInteger quick = new AtomicInteger();
        tasks.every("quick", other, TICK, quick::incrementAndGet);
        try {
            assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
            int before = quick.get();
            assertThat(Poll.eventually(WAIT, () -> quick.get() >= before + 20))
                    .as("the other executor's task runs on while the slow one holds its thread").isTrue();
            assertThat(runs("slow")).as("the slow task is still in its first run").isZero();
        } finally {
            release.countDown();
        }
        assertThat(Poll.eventually(WAIT, () -> runs("slow") >= 2)).isTrue();
    }

    @Test
    void theFirstFailureIsLoggedWithItsStackTraceRepeatsAreThrottledAndRecoverySaid() throws Exception {
        Logger logger = (Logger) LoggerFactory.getLogger(PeriodicTask.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        logger.addAppender(lines);
        try {
            AtomicInteger calls = new AtomicInteger();
            long start = System.nanoTime();
            tasks.every("noisy", one, Duration.ofMillis(1), () -> {
                if (calls.incrementAndGet() <= 50) {
                    throw new IllegalStateException("broken");
                }
            });
            assertThat(Poll.eventually(WAIT, () -> List.copyOf(lines.list).stream()
                    .anyMatch(e -> e.getLevel() == Level.INFO))).as("a recovery line").isTrue();
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start) + 1;
            List<ILoggingEvent> warns = List.copyOf(lines.list).stream()
                    .filter(e -> e.getLevel() == Level.WARN).toList();
            assertThat(warns.get(0).getFormattedMessage())
                    .isEqualTo("background task failed task=noisy error=\"java.lang.IllegalStateException: broken\"");
            assertThat(warns.get(0).getThrowableProxy()).as("the first failure's stack trace").isNotNull();
            assertThat(warns).as("at most one line a second after the first, not 50")
                    .hasSizeLessThanOrEqualTo(1 + (int) seconds);
            assertThat(warns.subList(1, warns.size())).allSatisfy(e -> {
                assertThat(e.getFormattedMessage()).startsWith("background task failed task=noisy failed_runs=");
                assertThat(e.getThrowableProxy()).isNull();
            });
            assertThat(List.copyOf(lines.list).stream().filter(e -> e.getLevel() == Level.INFO)
                    .map(ILoggingEvent::getFormattedMessage))
                    .containsExactly("background task recovered task=noisy failed_runs=50");
            assertThat(failures("noisy")).isEqualTo(50.0);
        } finally {
            logger.detachAppender(lines);
        }
    }

    @Test
    void closingTheTasksStopsEveryTaskStillScheduled() throws Exception {
        AtomicInteger a = new AtomicInteger();
        PeriodicTask first = tasks.every("first", one, TICK, a::incrementAndGet);
        PeriodicTask second = tasks.every("second", other, TICK, a::incrementAndGet);
        first.close(); // closed on its own first (a replaced health checker), then again with the rest: idempotent
        assertThat(first.scheduled()).isFalse();
        assertThat(second.scheduled()).isTrue();
        tasks.close();
        assertThat(second.scheduled()).isFalse();
    }

    @Test
    void aTaskNameIsABoundedSnakeCaseLabel() {
        assertThatThrownBy(() -> tasks.every("Bad-Name", one, TICK, () -> { }))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Bad-Name (expected: snake_case");
        assertThatThrownBy(() -> tasks.every("busy", one, Duration.ZERO, () -> { }))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expected: delay > 0");
    }
}
