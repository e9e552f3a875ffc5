package dev.sluice.gateway.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A stop that never ends is cut short, with the stuck thread's stack; one that ends is left alone. */
class StopWatchdogTest {
    private static void stuckInClose(CountDownLatch never) {
        try {
            never.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void aStopThatNeverEndsIsCutShortAndItsStackNamed() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        Thread stopper = new Thread(() -> stuckInClose(never), "sluice-drain");
        stopper.start();
        CountDownLatch stopped = new CountDownLatch(1);
        CountDownLatch cut = new CountDownLatch(1);
        long t0 = System.nanoTime();
        StopWatchdog.start(stopper, stopped, Duration.ofMillis(200), cut::countDown);
        assertThat(cut.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isGreaterThanOrEqualTo(200);
        String stacks = StopWatchdog.stacks(stopper);
        assertThat(stacks).startsWith("sluice-drain WAITING at ").contains("StopWatchdogTest.stuckInClose");
        never.countDown();
        stopper.join(5_000);
    }

    @Test
    void aStopThatEndsInTimeIsLeftAlone() throws Exception {
        Thread stopper = new Thread(() -> { }, "sluice-drain");
        CountDownLatch stopped = new CountDownLatch(1);
        CountDownLatch cut = new CountDownLatch(1);
        Thread watchdog = StopWatchdog.start(stopper, stopped, Duration.ofMillis(300), cut::countDown);
        stopped.countDown();
        watchdog.join(5_000);
        assertThat(watchdog.isAlive()).isFalse();
        assertThat(cut.getCount()).isEqualTo(1);
    }
}
