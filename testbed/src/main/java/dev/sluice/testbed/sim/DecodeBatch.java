package dev.sluice.testbed.sim;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A server's running decode batch: at most {@code decodeMaxBatch} items decode, and on a server of
 * several data-parallel ranks at most {@link SimWorker#runningCapPerRank()} of them on one rank; the
 * rest wait in FCFS order, an item of a full rank letting those of other ranks go ahead (each SGLang
 * rank is a scheduler with its own waiting queue and running cap). Every {@code decodeStep} (times {@code slowFactor}) each running item emits one token;
 * with a zero step each item emits as fast as its client's socket takes bytes, pausing while the
 * channel is not writable. The token faults ({@code stallAfterTokens}, {@code dropAfterTokens},
 * {@code failAfterTokens}) strike here. Confined to the server's event loop.
 */
final class DecodeBatch {
    private static final Logger log = LoggerFactory.getLogger(DecodeBatch.class);
    private static final int TOKENS_PER_PUMP = 128;

    private final SimWorker server;
    private final ArrayDeque<SimItem> waiting = new ArrayDeque<>();
    private final ArrayList<SimItem> running = new ArrayList<>();
    /** Running items per data-parallel rank (resized when the server's dp size is read anew: never, today). */
    private int[] runningOnRank = new int[0];
    private ScheduledFuture<?> ticker;

    DecodeBatch(SimWorker server) {
        this.server = server;
    }

    void add(SimItem item) {
        item.state = SimItem.State.DECODE_QUEUED;
        waiting.addLast(item);
        fill();
    }

    void remove(SimItem item) {
        if (running.remove(item)) {
            runningOnRank[rankOf(item)]--;
            fill();
        } else {
            waiting.remove(item);
        }
    }

    int running() {
        return running.size();
    }

    int waiting() {
        return waiting.size();
    }

    /** KV tokens the running batch holds (prompt plus generated). */
    long tokens() {
        long sum = 0;
        for (SimItem i : running) {
            sum += i.promptTokens + i.generated;
        }
        return sum;
    }

    /** The client's socket drained: paused items of that exchange go on (zero-step mode). */
    void resume(Exchange ex) {
        if (zeroStep()) {
            for (SimItem item : ex.items) {
                if (item.state == SimItem.State.DECODING) {
                    schedulePump(item);
                }
            }
        }
    }

    private boolean zeroStep() {
        return server.cfg.decodeStep().isZero();
    }

    /** Running items on one data-parallel rank. */
    int runningOn(int rank) {
        return rank < runningOnRank.length ? runningOnRank[rank] : 0;
    }

    private int rankOf(SimItem item) {
        int n = server.cfg.dpSize();
        if (runningOnRank.length != n) {
            runningOnRank = java.util.Arrays.copyOf(runningOnRank, n);
        }
        return Math.floorMod(item.dpRank, n);
    }

    /**
     * Starts waiting items, oldest first, while the server's batch has room, each only when its own
     * rank is below its running cap: a PD decode's scheduler moves requests from its waiting queue
     * (KV already transferred) into the running batch up to {@code max_running_requests} minus what
     * runs ({@code get_new_prebuilt_batch}, sgl-project/sglang@278e503a5e16252fb4ff513018b6a73e30976f63
     * python/sglang/srt/disaggregation/decode.py), each rank against its own cap.
     */
    private void fill() {
        int cap = server.runningCapPerRank();
        for (java.util.Iterator<SimItem> it = waiting.iterator();
             it.hasNext() && running.size() < server.cfg.decodeMaxBatch(); ) {
            SimItem item = it.next();
            int rank = rankOf(item);
            if (runningOnRank[rank] >= cap) {
                continue;
            }
            it.remove();
            runningOnRank[rank]++;
            item.state = SimItem.State.DECODING;
            running.add(item);
            if (zeroStep()) {
                schedulePump(item);
            }
        }
        if (!zeroStep() && ticker == null && !running.isEmpty()) {
            scheduleTick();
        }
    }

    private void scheduleTick() {
        long nanos = (long) (server.cfg.decodeStep().toNanos() * server.faults.slowFactor());
        ticker = server.loop.schedule(this::tick, nanos, TimeUnit.NANOSECONDS);
    }

    private void tick() {
        ticker = null;
        long now = System.nanoTime();
        // one step computes the whole batch: each item that got a token is charged its share, when
        // its client had left before its first token (later steps of a client that stayed are not)
        long stepNanos = (long) (server.cfg.decodeStep().toNanos() * server.faults.slowFactor());
        int batchSize = running.size();
        for (SimItem item : running.toArray(new SimItem[0])) {
            if (item.state == SimItem.State.DECODING) {
                int before = item.generated;
                step(item);
                if (item.generated > before && item.firstTokenLate) {
                    server.workDone(item, now - stepNanos, now, batchSize);
                }
            }
        }
        if (ticker == null && !running.isEmpty()) {
            scheduleTick();
        }
        server.publishGauges();
    }

    private void schedulePump(SimItem item) {
        if (!item.pumpScheduled) {
            item.pumpScheduled = true;
            server.loop.execute(() -> pump(item));
        }
    }

    private void pump(SimItem item) {
        item.pumpScheduled = false;
        for (int n = 0; n < TOKENS_PER_PUMP; n++) {
            if (item.state != SimItem.State.DECODING || !step(item)) {
                return;
            }
        }
        schedulePump(item); // yield the event loop to other items and connections
    }

    void close() {
        if (ticker != null) {
            ticker.cancel(false);
            ticker = null;
        }
    }

    /** One token for a running item; true when the item can go on at once. */
    private boolean step(SimItem item) {
        Exchange ex = item.exchange;
        if (item.generated >= item.maxTokens) {
            finish(item);
            return false;
        }
        FaultKnobs f = server.faults;
        int g = item.generated;
        if (f.dropAfterTokens() >= 0 && g >= f.dropAfterTokens()) {
            if (!ex.dropped) {
                log.info("{} {} dropping the connection rid={} after {} tokens", server.role(), server.ordinal,
                        item.rid, g);
                ex.dropped = true;
                ex.channel.close();
            }
            return false;
        }
        if (f.failAfterTokens() >= 0 && g >= f.failAfterTokens()) {
            server.endItem(item, SimWorker.Outcome.FAILED, null);
            ex.fail(500, "InternalServerError", "simulated failure after " + g + " tokens");
            return false;
        }
        if (f.stallAfterTokens() >= 0 && g >= f.stallAfterTokens()) {
            return false;
        }
        // a closed channel is never writable: a request the server did not abort (yet) runs on unread
        if (ex.request.stream() && ex.channel.isActive() && !ex.channel.isWritable()) {
            return false;
        }
        item.text.append(SimItem.token(g));
        item.generated++;
        server.metrics.tokenGenerated();
        server.outputProduced();
        if (g == 0) {
            server.metrics.observeTtft(ex.secondsSinceReceived());
            long now = System.nanoTime();
            item.firstTokenLate = item.departedAt(now);
            server.workStarting(item, now, true);
        }
        boolean last = item.generated >= item.maxTokens;
        if (last) {
            item.finishReason = "length";
        } else {
            ex.tokenProduced(item.generated);
        }
        if (ex.request.stream()) {
            ex.send(ex.format.tokenEvent(ex, item, last));
        }
        if (last) {
            finish(item);
            return false;
        }
        return true;
    }

    private void finish(SimItem item) {
        server.endItem(item, SimWorker.Outcome.COMPLETED, "length");
        item.exchange.itemEnded(item);
    }
}
