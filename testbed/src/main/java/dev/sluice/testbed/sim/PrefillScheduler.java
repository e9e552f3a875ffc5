package dev.sluice.testbed.sim;

import java.util.ArrayDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The prefill's unbounded FCFS queue: one item at a time computes its prompt at
 * {@code prefillTokensPerSecond} (times {@code slowFactor}), in slices of at most 10 ms of wall
 * time so that an abort stops the work at once. Confined to the server's event loop.
 */
final class PrefillScheduler {
    private static final double SLICE_SECONDS = 0.010;

    private final PrefillServer server;
    private final ArrayDeque<SimItem> queue = new ArrayDeque<>();
    private SimItem current;
    private ScheduledFuture<?> slice;
    private double sliceTokens;
    private long sliceStartNanos;
    private long queuedTokens;
    private double processed;

    PrefillScheduler(PrefillServer server) {
        this.server = server;
    }

    void enqueue(SimItem item) {
        item.state = SimItem.State.QUEUED;
        queue.addLast(item);
        queuedTokens += item.promptTokens;
        if (current == null) {
            startNext();
        }
    }

    /** Drops an item that is queued or prefilling; the next one starts at once. */
    void remove(SimItem item) {
        if (item == current) {
            server.workDone(item, sliceStartNanos, System.nanoTime()); // the partial slice was GPU time too
            slice.cancel(false);
            slice = null;
            current = null;
            startNext();
        } else if (queue.remove(item)) {
            queuedTokens -= item.promptTokens;
        }
    }

    int queued() {
        return queue.size();
    }

    int prefilling() {
        return current == null ? 0 : 1;
    }

    /** Prompt tokens waiting or being computed. */
    long tokens() {
        return queuedTokens + (current == null ? 0 : (long) Math.ceil(current.remainingPrefill));
    }

    private void startNext() {
        current = queue.pollFirst();
        if (current == null) {
            return;
        }
        queuedTokens -= current.promptTokens;
        current.state = SimItem.State.PREFILLING;
        scheduleSlice();
    }

    private void scheduleSlice() {
        SimItem item = current;
        sliceStartNanos = System.nanoTime();
        server.workStarting(item, sliceStartNanos, item.remainingPrefill == item.promptTokens);
        double rate = server.cfg.prefillTokensPerSecond();
        double slow = server.faults.slowFactor();
        sliceTokens = Math.min(item.remainingPrefill, Math.max(1e-6, rate * SLICE_SECONDS / slow));
        long nanos = (long) (sliceTokens / rate * slow * 1e9);
        slice = server.loop.schedule(this::sliceDone, nanos, TimeUnit.NANOSECONDS);
    }

    private void sliceDone() {
        SimItem item = current;
        if (item == null) {
            return;
        }
        server.workDone(item, sliceStartNanos, System.nanoTime());
        item.remainingPrefill -= sliceTokens;
        processed += sliceTokens;
        server.promptTokensProcessed = Math.round(processed);
        if (item.remainingPrefill > 1e-6) {
            scheduleSlice();
            return;
        }
        item.remainingPrefill = 0;
        current = null;
        slice = null;
        server.prefillDone(item);
        startNext();
        server.publishGauges();
    }
}
