package dev.sluice.gateway.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The failure report names the threads asked for, with their state and where they are; no other thread. */
class SubscriptionReportTest {
    @Test
    void aStuckThreadShowsWithItsStateAndStack() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            started.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "test-kv-events-stuck");
        t.start();
        try {
            started.await();
            assertThat(PdTestbed.eventually(java.time.Duration.ofSeconds(5), () -> t.getState() == Thread.State.WAITING))
                    .isTrue();
            String report = SubscriptionReport.threads("kv-events-stuck");
            assertThat(report).contains("-- thread test-kv-events-stuck WAITING").contains("CountDownLatch.await")
                    .doesNotContain("-- thread main");
        } finally {
            release.countDown();
            t.join(2_000);
        }
    }
}
