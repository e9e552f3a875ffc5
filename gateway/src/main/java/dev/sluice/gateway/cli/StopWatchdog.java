package dev.sluice.gateway.cli;

import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last word on a stop: a gateway told to stop (SIGTERM, Ctrl-C) drains for at most
 * {@code admission.drain_grace} and then closes; should the close itself never finish (a thread
 * that does not end, a wait on something that never comes), the process would linger with its
 * listener closed and nobody told. This watchdog gives the drain and the close their time plus
 * {@link #MARGIN}, then logs where every gateway thread stands and halts with status 1: a stop
 * always ends, and the log says what held it. Under systemd, {@code TimeoutStopSec} is the outer
 * bound of the same kind; this one is the gateway's own, and comes with the stacks.
 */
final class StopWatchdog {
    /** What the close may take after the drain: its own waits are bounded at a few seconds each. */
    static final Duration MARGIN = Duration.ofSeconds(30);
    private static final Logger log = LoggerFactory.getLogger(StopWatchdog.class);

    private StopWatchdog() {
    }

    static Thread start(Thread stopper, CountDownLatch stopped, Duration limit) {
        return start(stopper, stopped, limit, () -> {
            // the log line must reach stdout before the halt (its writer batches every 20 ms)
            try {
                Thread.sleep(300);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
            Runtime.getRuntime().halt(1);
        });
    }

    /** ... with what to do once the limit passed and the stop's stacks are logged (tests: record it). */
    static Thread start(Thread stopper, CountDownLatch stopped, Duration limit, Runnable onStuck) {
        Thread t = new Thread(() -> {
            try {
                if (stopped.await(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                    return;
                }
            } catch (InterruptedException e) {
                return;
            }
            log.error("stop did not finish within {} ms (drain grace + {} s): halting; threads: {}", limit.toMillis(),
                    MARGIN.toSeconds(), stacks(stopper));
            onStuck.run();
        }, "sluice-stop-watchdog");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The stop thread's stack first, then every other live non-daemon thread's top frames. */
    static String stacks(Thread stopper) {
        Map<Thread, StackTraceElement[]> all = Thread.getAllStackTraces();
        StringBuilder b = new StringBuilder();
        b.append(stopper.getName()).append(' ').append(stopper.getState()).append(" at ")
                .append(frames(all.getOrDefault(stopper, stopper.getStackTrace()), 12));
        all.entrySet().stream().filter(e -> e.getKey() != stopper && !e.getKey().isDaemon() && e.getKey().isAlive())
                .forEach(e -> b.append(" | ").append(e.getKey().getName()).append(' ').append(e.getKey().getState())
                        .append(" at ").append(frames(e.getValue(), 4)));
        return b.toString();
    }

    private static String frames(StackTraceElement[] st, int n) {
        return Arrays.stream(st).limit(n).map(StackTraceElement::toString).collect(Collectors.joining(" <- "));
    }
}
