package dev.sluice.testbed.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waiting in tests: poll a condition with a deadline, never sleep a fixed time and hope. */
public final class Poll {
    private Poll() {
    }

    /** Polls until the condition holds or the timeout passes; returns whether it held. */
    public static boolean eventually(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(5); // the poll's own pace
        }
        return condition.getAsBoolean();
    }
}
