package dev.sluice.testbed.sim;

import java.util.ArrayDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A server's unbounded FCFS prefill queue: one item at a time computes its prompt at
 * {@code prefillTokensPerSecond} (times {@code slowFactor}), in slices of at most 10 ms of wall
 * time so that an abort stops the work at once. When an item starts, the server's prefix cache
 * says how much of its prompt is already there: only the rest is computed; when it completes, its
 * prompt enters the cache. Confined to the server's event loop.
 */
final class PrefillScheduler {
    private static final double SLICE_SECONDS = 0.010;

    private final SimWorker server;
    private final Consumer<SimItem> prefilled;
    private final ArrayDeque<SimItem> queue = new ArrayDeque<>();
    private SimItem current;
    private ScheduledFuture<?> slice;
    private double sliceTokens;
    private long sliceStartNanos;
    private long queuedTokens;
    private double processed;

    /** {@code prefilled}: where an item goes once its prompt is computed (its KV is ready). */
    PrefillScheduler(SimWorker server, Consumer<SimItem> prefilled) {
        this.server = server;
        this.prefilled = prefilled;
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
            long now = System.nanoTime();
            server.workDone(item, sliceStartNanos, now); // the partial slice was GPU time too
            server.prefillBusyNanos += now - sliceStartNanos;
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
        // looked up when the prefill starts, not on arrival: a request queued behind one with the
        // same prefix finds it cached, as in a real scheduler
        current.cachedTokens = server.prefixCache.lookup(current.dpRank, current.prefix, current.promptTokens);
        current.remainingPrefill = current.promptTokens - current.cachedTokens;
        scheduleSlice(true);
    }

    private void scheduleSlice(boolean first) {
        SimItem item = current;
        sliceStartNanos = System.nanoTime();
        server.workStarting(item, sliceStartNanos, first);
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
        long now = System.nanoTime();
        server.workDone(item, sliceStartNanos, now);
        server.prefillBusyNanos += now - sliceStartNanos;
        item.remainingPrefill -= sliceTokens;
        processed += sliceTokens;
        server.promptTokensProcessed = Math.round(processed);
        if (item.remainingPrefill > 1e-6) {
            scheduleSlice(false);
            return;
        }
        item.remainingPrefill = 0;
        current = null;
        slice = null;
        server.prefixCache.insert(item.dpRank, item.prefix, item.blockTokens);
        prefilled.accept(item);
        startNext();
        server.publishGauges();
    }
}
